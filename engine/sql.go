package engine

import (
	"fmt"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/engine/world"
)

// coordinatorSQL holds the coordinator's statements, read once from assets.
type coordinatorSQL struct {
	schema, bind, clear, seed, read, acquire, renewBlind, renewCompare, release, reelectAny string
}

func loadCoordinatorSQL() (coordinatorSQL, error) {
	var c coordinatorSQL
	err := assets.LoadSQL(map[string]*string{
		"coordinator_schema": &c.schema, "coordinator_bind": &c.bind, "coordinator_clear": &c.clear,
		"coordinator_seed": &c.seed, "coordinator_read": &c.read, "coordinator_acquire": &c.acquire,
		"coordinator_renew_blind": &c.renewBlind, "coordinator_renew_compare": &c.renewCompare,
		"coordinator_release": &c.release, "coordinator_reelect_any": &c.reelectAny,
	})
	return c, err
}

// statement is the text of one of the statements a move runs.
func (c coordinatorSQL) statement(s world.Statement) (string, error) {
	switch s {
	case world.StmtRead:
		return c.read, nil
	case world.StmtAcquire:
		return c.acquire, nil
	case world.StmtRenewBlind:
		return c.renewBlind, nil
	case world.StmtRenewCompare:
		return c.renewCompare, nil
	case world.StmtRelease:
		return c.release, nil
	case world.StmtReelect:
		return c.reelectAny, nil
	}
	return "", fmt.Errorf("leaserace has no coordinator statement %d", s)
}
