package pgserver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgdsn"
)

// DSNProvider uses a PostgreSQL server that someone else runs. leaserace
// never stops it: Close on its Server does nothing.
type DSNProvider struct {
	// DSN is a postgres:// URL or a key=value connection string. When empty,
	// DATABASE_URL is used, and failing that the libpq variables (PGHOST,
	// PGPORT, PGUSER, PGDATABASE, PGPASSWORD, ...), as psql would.
	DSN string
}

// Name is the provider's name on the command line.
func (DSNProvider) Name() string { return "dsn" }

// dsnConnectTimeout bounds the connection check when ctx has no deadline.
const dsnConnectTimeout = 15 * time.Second

// Start checks that the server answers and describes it.
func (p DSNProvider) Start(ctx context.Context, progress func(string)) (*Server, error) {
	began := time.Now()
	dsn, source := p.DSN, "the given DSN"
	if dsn == "" {
		dsn, source = os.Getenv("DATABASE_URL"), "DATABASE_URL"
	}
	if dsn == "" {
		source = "the PG* environment variables"
	}
	report(progress, "connecting with "+source)

	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx quotes the string back, and its redaction is best effort on a
		// string it could not parse: say what is wrong without echoing it.
		return nil, fmt.Errorf("the connection string from %s is not valid: write it as postgres://user:password@host:port/dbname or as key=value pairs", source)
	}
	if dsn == "" {
		// Spell out where the variables led, so the DSN can be shown and
		// reused; the password stays in the environment.
		dsn = keywordDSN(cfg)
	}

	ctx, cancel := context.WithTimeout(ctx, dsnConnectTimeout)
	defer cancel()
	version, err := ServerVersion(ctx, dsn)
	if err != nil {
		err = fmt.Errorf("cannot use the PostgreSQL server from %s (%s): %w", source, pgdsn.Redact(dsn), err)
		return nil, WithoutSecret(err, cfg.Password)
	}
	return &Server{Provider: "dsn", DSN: dsn, Took: time.Since(began), Version: version}, nil
}

// keywordDSN writes where a parsed configuration points as key=value pairs.
func keywordDSN(cfg *pgx.ConnConfig) string {
	pairs := []string{
		"host=" + pgdsn.QuoteValue(cfg.Host),
		fmt.Sprintf("port=%d", cfg.Port),
		"user=" + pgdsn.QuoteValue(cfg.User),
		"dbname=" + pgdsn.QuoteValue(cfg.Database),
	}
	return strings.Join(pairs, " ")
}
