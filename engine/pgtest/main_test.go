package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/pgtest/containertest"
)

// TestMain is containertest's: pgtest's own tests run containers too, and
// those of the watcher check it removes them.
func TestMain(m *testing.M) { containertest.Main(m) }

func TestServersFromEveryProvider(t *testing.T) {
	t.Parallel()
	servers := pgtest.Servers(t)
	if len(servers) != 3 && os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
		t.Fatalf("servers %v: want local, container and dsn", servers)
	}
	for _, s := range servers {
		t.Run(s.Provider, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), pgtest.WaitTimeout())
			defer cancel()
			conn, err := pgx.Connect(ctx, s.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var one int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1 gave %d, %v", one, err)
			}
		})
	}
}
