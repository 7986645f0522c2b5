//go:build !leaserace_faults

package engine

import "github.com/leaserace/leaserace/scenario"

// faultsBuilt says whether this build can inject faults; release builds
// cannot. See faults_on.go.
const faultsBuilt = false

// faultState is empty in release builds.
//
//lint:ignore U1000 live.faults is used by builds with the leaserace_faults tag.
type faultState struct{}

// faultPoint does nothing in release builds.
func (l *live) faultPoint(faultStage, scenario.Move) {}

// tracePlayed does nothing in release builds.
func (l *live) tracePlayed(string, scenario.Knobs) {}
