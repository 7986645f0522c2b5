package main

import (
	"github.com/leaserace/leaserace/scenario"
	"github.com/spf13/pflag"
)

// knobFlags are --renewal and --fencing as typed.
type knobFlags struct {
	renewal string
	fencing string
}

func (k *knobFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&k.renewal, "renewal", string(scenario.RenewalBlind),
		"how a delivered heartbeat renews the lease: blind (overwrite from its snapshot) or compare (compare-and-renew)")
	fs.StringVar(&k.fencing, "fencing", string(scenario.FencingOff),
		"the resource's check on each write's epoch: off, strict (>) or monotonic (>=)")
}

// knobs validates both flags; the error names the flag and what it takes.
func (k *knobFlags) knobs() (scenario.Knobs, error) {
	r, err := scenario.ParseRenewal(k.renewal)
	if err != nil {
		return scenario.Knobs{}, usageErr("--renewal: %w", err)
	}
	f, err := parseFencingFlag(k.fencing)
	if err != nil {
		return scenario.Knobs{}, err
	}
	return scenario.Knobs{Renewal: r, Fencing: f}, nil
}

func parseFencingFlag(s string) (scenario.Fencing, error) {
	f, err := scenario.ParseFencing(s)
	if err != nil {
		return "", usageErr("--fencing: %w", err)
	}
	return f, nil
}

// loadScenario resolves --scenario. A bad file's error already says
// file:line:column and what was expected, so it is shown as it is.
func loadScenario(nameOrFile string) (*scenario.Scenario, error) {
	sc, err := scenario.Load(nameOrFile)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return sc, nil
}

// timeline is the range of logical times a scenario covers: its window
// widened to take in every event.
func timeline(sc *scenario.Scenario) (from, to int64) {
	from, to = sc.Window.From, sc.Window.To
	for _, e := range sc.Events {
		from, to = min(from, e.T), max(to, e.T)
	}
	return from, to
}
