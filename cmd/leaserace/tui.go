package main

import (
	"context"
	"sync"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/tui"
)

// runTUI hands the checked flags to the interactive UI, with the
// provider's Start for it to call, so that its spinner can show the progress. A provider
// that cannot start ends the process with exit code 3, unless the UI fell
// back to the shipped recordings; then standard error says so on the way
// out, under the screen the alternate screen gives back.
func (a *app) runTUI(ctx context.Context, prov pgserver.Provider, o tuiOptions) error {
	w := &watchedProvider{Provider: prov, a: a}
	err := tui.Run(ctx, tui.Options{
		Start:        w.Start,
		ProviderName: prov.Name(),
		Scenario:     o.scenario,
		Knobs:        o.knobs,
		At:           o.at,
		ExportDir:    o.exportDir,
		Fallback:     o.fallback,
		Play:         o.play,
		NoAsk:        o.noAsk,
		NoColor:      a.NoColor(),
		In:           a.Stdin,
		Out:          a.Stdout,
		Stderr:       a.Stderr,
	})
	if err != nil && w.failed() && ctx.Err() == nil {
		return cli.WithCode(cli.ExitNoServer, err)
	}
	if err == nil && w.failed() {
		a.Errorf("No PostgreSQL here (%s); showed the recorded runs instead. --dsn, Docker or the PostgreSQL server packages make leaserace run the race live.", tui.OfflineReason(w.err()))
	}
	return err
}

// watchedProvider remembers whether Start failed, and the password of the
// server it started, for a UI that reports only an error.
type watchedProvider struct {
	pgserver.Provider
	a *app

	mu       sync.Mutex
	startErr error
}

func (w *watchedProvider) Start(ctx context.Context, progress func(string)) (*pgserver.Server, error) {
	srv, err := w.Provider.Start(ctx, progress)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.startErr = err
	if err == nil && srv != nil {
		w.a.AddSecretsFromDSN(srv.DSN)
	}
	return srv, err
}

func (w *watchedProvider) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.startErr
}

func (w *watchedProvider) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.startErr != nil
}
