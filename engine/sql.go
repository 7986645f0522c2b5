package engine

import (
	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/scenario"
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

func (c coordinatorSQL) renew(r scenario.Renewal) string {
	if r == scenario.RenewalCompare {
		return c.renewCompare
	}
	return c.renewBlind
}
