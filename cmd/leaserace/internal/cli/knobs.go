package cli

import (
	"strings"

	"github.com/leaserace/leaserace/scenario"
	"github.com/spf13/pflag"
)

// KnobFlags are --renewal and --fencing as typed.
type KnobFlags struct {
	Renewal string
	Fencing string
}

func (k *KnobFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&k.Renewal, "renewal", string(scenario.RenewalBlind),
		"how a delivered heartbeat renews the lease: blind (overwrite from its snapshot) or compare (compare-and-renew)")
	fs.StringVar(&k.Fencing, "fencing", string(scenario.FencingOff),
		"the resource's check on each write's fence: off, strict (>) or monotonic (>=)")
}

// Knobs validates both flags; the error names the flag and what it takes.
func (k *KnobFlags) Knobs() (scenario.Knobs, error) {
	r, err := scenario.ParseRenewal(k.Renewal)
	if err != nil {
		return scenario.Knobs{}, UsageErr("--renewal: %w", err)
	}
	f, err := ParseFencingFlag(k.Fencing)
	if err != nil {
		return scenario.Knobs{}, err
	}
	return scenario.Knobs{Renewal: r, Fencing: f}, nil
}

func ParseFencingFlag(s string) (scenario.Fencing, error) {
	f, err := scenario.ParseFencing(s)
	if err != nil {
		return "", UsageErr("--fencing: %w", err)
	}
	return f, nil
}

// LoadScenario resolves --scenario. A bad file's error already says
// file:line:column and what was expected, so it is shown as it is.
func LoadScenario(nameOrFile string) (*scenario.Scenario, error) {
	// Every --scenario defaults to renewal-race, so an empty one was typed
	// (or an unset shell variable): say so rather than play the default.
	if strings.TrimSpace(nameOrFile) == "" {
		return nil, UsageErr("--scenario %q: want a built-in scenario's name (%s) or a scenario YAML file", nameOrFile, strings.Join(scenario.BuiltinNames(), ", "))
	}
	sc, err := scenario.Load(nameOrFile)
	if err != nil {
		return nil, WithCode(ExitUsage, err)
	}
	return sc, nil
}

// Timeline is the range of logical times a scenario covers: its window
// widened to take in every event.
func Timeline(sc *scenario.Scenario) (from, to int64) {
	from, to = sc.Window.From, sc.Window.To
	for _, e := range sc.Events {
		from, to = min(from, e.T), max(to, e.T)
	}
	return from, to
}
