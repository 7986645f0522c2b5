package main

import (
	"context"
	"errors"

	"github.com/leaserace/leaserace/engine"
)

// runTUI stands in for the interactive UI until the tui package is in the
// tree; the headless commands do not need it.
func (a *app) runTUI(context.Context, engine.Provider, tuiOptions) error {
	return errors.New("this build has no interactive UI yet; use leaserace run, check, scenarios or resource")
}
