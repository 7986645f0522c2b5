// Package servertest holds what the provider packages' tests (pgserver,
// pgcontainer, choose) share: a bounded context, a progress log, a query
// that proves a server answers, and the skip-or-fail of a missing provider.
package servertest

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/pgserver"
)

// Ctx is a context for one start or stop, ended with the test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Unavailable skips, or fails when LEASERACE_REQUIRE_POSTGRES=1 says this
// machine must offer every provider.
func Unavailable(t testing.TB, why string, err error) {
	t.Helper()
	if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
		t.Fatalf("%s (LEASERACE_REQUIRE_POSTGRES=1): %v", why, err)
	}
	t.Skipf("%s: %v", why, err)
}

// Progress collects progress lines from any goroutine.
type Progress struct {
	mu    sync.Mutex
	lines []string
}

// Add is a provider's progress func.
func (p *Progress) Add(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, line)
}

// All is every line so far.
func (p *Progress) All() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// Own is the progress of the start itself, without the lines about what a
// killed leaserace elsewhere on this machine left and the start removed.
func (p *Progress) Own() []string {
	return slices.DeleteFunc(p.All(), func(l string) bool {
		return strings.HasPrefix(l, "removed ") || strings.HasPrefix(l, "could not remove ")
	})
}

// SelectOne proves the server at dsn answers a query.
func SelectOne(t testing.TB, dsn string) {
	t.Helper()
	ctx := Ctx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", pgdsn.Redact(dsn), err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 gave %d, %v", one, err)
	}
}

// BenchmarkStart starts and closes a server b.N times, and reports the
// mean of each.
func BenchmarkStart(b *testing.B, start func(testing.TB) *pgserver.Server) {
	var took, closing time.Duration
	for b.Loop() {
		srv := start(b)
		took += srv.Took
		t0 := time.Now()
		if err := srv.Close(Ctx(b)); err != nil {
			b.Fatal(err)
		}
		closing += time.Since(t0)
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "start-ms/op")
	b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms/op")
}
