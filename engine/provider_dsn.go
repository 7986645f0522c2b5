package engine

import "github.com/leaserace/leaserace/engine/internal/pgserver"

// DSNProvider uses a PostgreSQL server someone else runs, from its DSN
// field, else DATABASE_URL, else the libpq PG* variables. Close leaves that
// server alone.
type DSNProvider = pgserver.DSNProvider
