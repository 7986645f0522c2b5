package engine

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/scenario"
)

// coordinatorSQL holds the coordinator's statements, read once from assets.
type coordinatorSQL struct {
	schema, clear, seed, read, acquire, renewBlind, renewCompare string
}

func loadSQL(name string) (string, error) {
	b, err := fs.ReadFile(assets.FS, "sql/"+name+".sql")
	if err != nil {
		return "", fmt.Errorf("embedded SQL %s is missing: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func loadCoordinatorSQL() (coordinatorSQL, error) {
	var c coordinatorSQL
	for _, x := range []struct {
		name string
		dst  *string
	}{
		{"coordinator_schema", &c.schema},
		{"coordinator_clear", &c.clear},
		{"coordinator_seed", &c.seed},
		{"coordinator_read", &c.read},
		{"coordinator_acquire", &c.acquire},
		{"coordinator_renew_blind", &c.renewBlind},
		{"coordinator_renew_compare", &c.renewCompare},
	} {
		s, err := loadSQL(x.name)
		if err != nil {
			return c, err
		}
		*x.dst = s
	}
	return c, nil
}

func (c coordinatorSQL) renew(r scenario.Renewal) string {
	if r == scenario.RenewalCompare {
		return c.renewCompare
	}
	return c.renewBlind
}
