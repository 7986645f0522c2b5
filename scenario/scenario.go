// Package scenario holds leaserace's scenarios as plain data: what happens,
// when, and what each knob setting is expected to produce. It validates but
// never touches a database or a terminal.
package scenario

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Renewal is how a delivered heartbeat renews the lease at the coordinator.
type Renewal string

// Fencing is the check the protected resource applies to each write's epoch.
type Fencing string

const (
	// RenewalBlind writes the row from the heartbeat's cached snapshot with no
	// ownership condition.
	RenewalBlind Renewal = "blind"
	// RenewalCompare is compare-and-renew: the row is renewed only while the
	// snapshot's owner, fence and lease_version are still current and unexpired.
	RenewalCompare Renewal = "compare"

	// FencingOff accepts every write.
	FencingOff Fencing = "off"
	// FencingStrict accepts only epochs above the stored one (the unsuccessful fix).
	FencingStrict Fencing = "strict"
	// FencingMonotonic accepts epochs at or above the stored one (the verified repair).
	FencingMonotonic Fencing = "monotonic"
)

// Renewals lists every renewal mode in display order.
func Renewals() []Renewal { return []Renewal{RenewalBlind, RenewalCompare} }

// Fencings lists every fencing mode in display order.
func Fencings() []Fencing { return []Fencing{FencingOff, FencingStrict, FencingMonotonic} }

// ParseRenewal checks a renewal mode given by a person.
func ParseRenewal(s string) (Renewal, error) {
	for _, r := range Renewals() {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown renewal %q: want blind or compare", s)
}

// ParseFencing checks a fencing mode given by a person.
func ParseFencing(s string) (Fencing, error) {
	for _, f := range Fencings() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown fencing %q: want off, strict or monotonic", s)
}

// Describe says what the renewal mode does, in words for a header.
func (r Renewal) Describe() string {
	switch r {
	case RenewalBlind:
		return "blind overwrite"
	case RenewalCompare:
		return "compare-and-renew"
	}
	return string(r)
}

// Describe says what the fencing mode does, in words for a header.
func (f Fencing) Describe() string {
	switch f {
	case FencingOff:
		return "off (accept all)"
	case FencingStrict:
		return "strict >"
	case FencingMonotonic:
		return "monotonic ≥"
	}
	return string(f)
}

// Explain says what the renewal mode does, in a sentence: the one
// explanation every screen and export uses.
func (r Renewal) Explain() string {
	switch r {
	case RenewalBlind:
		return "a delivered heartbeat writes the lease row from its cached snapshot, with no ownership condition"
	case RenewalCompare:
		return "the row is renewed only while owner, fence and lease_version still match the snapshot and the lease has not expired; zero rows means the heartbeat was refused"
	}
	return ""
}

// Explain says what the fencing mode does, in a sentence: the one
// explanation every screen and export uses.
func (f Fencing) Explain() string {
	switch f {
	case FencingOff:
		return "the resource accepts every write, whatever its fence"
	case FencingStrict:
		return "the resource accepts only a fence above its highest fence accepted: it refuses stale fences but also the current holder's second write; the unsuccessful fix"
	case FencingMonotonic:
		return "the resource accepts a fence at or above its highest fence accepted and refuses only older ones; the verified repair"
	}
	return ""
}

// Next cycles off → strict → monotonic → off.
func (f Fencing) Next() Fencing {
	all := Fencings()
	for i, x := range all {
		if x == f {
			return all[(i+1)%len(all)]
		}
	}
	return FencingOff
}

// Toggle swaps blind and compare.
func (r Renewal) Toggle() Renewal {
	if r == RenewalBlind {
		return RenewalCompare
	}
	return RenewalBlind
}

// Knobs are the two settings a presenter can change between any two steps.
type Knobs struct {
	Renewal Renewal `json:"renewal"`
	Fencing Fencing `json:"fencing"`
}

func (k Knobs) String() string { return string(k.Renewal) + "/" + string(k.Fencing) }

// Check reports a setting that is not one of the six.
func (k Knobs) Check() error {
	if _, err := ParseRenewal(string(k.Renewal)); err != nil {
		return err
	}
	_, err := ParseFencing(string(k.Fencing))
	return err
}

// AllKnobs lists the six knob settings, renewal-major.
func AllKnobs() []Knobs {
	var out []Knobs
	for _, r := range Renewals() {
		for _, f := range Fencings() {
			out = append(out, Knobs{Renewal: r, Fencing: f})
		}
	}
	return out
}

// Lease is one row of the coordinator's leases table.
type Lease struct {
	Owner        string `json:"owner" yaml:"owner"`
	Fence        int64  `json:"fence" yaml:"fence"`
	LeaseVersion int64  `json:"lease_version" yaml:"lease_version"`
	ExpiresAt    int64  `json:"expires_at" yaml:"expires_at"`
}

// Clone is a copy of the row, or nil for none.
func (l *Lease) Clone() *Lease {
	if l == nil {
		return nil
	}
	c := *l
	return &c
}

// ResourceState is what the protected resource stores: the highest fence
// it accepted and the value written with it.
type ResourceState struct {
	Fence int64           `json:"fence"`
	Value json.RawMessage `json:"value"`
}

// Action names what an event or move does.
type Action string

const (
	ActionAcquire Action = "acquire"
	ActionSend    Action = "heartbeat.send"
	ActionDeliver Action = "heartbeat.deliver"
	// ActionReply is a renewal's reply reaching its sender, when it comes
	// later than the renewal itself.
	ActionReply  Action = "heartbeat.reply"
	ActionEffect Action = "effect"
	ActionWrite  Action = "write"
	// ActionWriteSend and ActionWriteDeliver are an effect's write delayed
	// in the network, as heartbeats are.
	ActionWriteSend    Action = "write.send"
	ActionWriteDeliver Action = "write.deliver"
	ActionExpire       Action = "expire"
	ActionPause        Action = "pause"
	ActionResume       Action = "resume"
	ActionRelease      Action = "release"
	// ActionReelect is a leader's re-election with River's upsert from
	// before riverqueue/river#199, whose ON CONFLICT condition compares
	// the row it tried to insert with itself: it extends whatever row is
	// there, whoever owns it, and answers one row. The renewal knob does
	// not change it.
	ActionReelect Action = "reelect"
	// ActionDrop and ActionAdvance exist only as moves a learner makes:
	// the network loses a message; the clock moves on.
	ActionDrop      Action = "drop"
	ActionAdvance   Action = "advance"
	defaultLeaseKey        = "lease"
)

// Actions lists every action a scenario file may use.
func Actions() []Action {
	return []Action{
		ActionAcquire, ActionSend, ActionDeliver, ActionReply, ActionEffect, ActionWrite,
		ActionWriteSend, ActionWriteDeliver, ActionExpire, ActionPause, ActionResume, ActionRelease,
		ActionReelect,
	}
}

// AllActions lists every action a move may have, file actions first.
func AllActions() []Action {
	return append(Actions(), ActionDrop, ActionAdvance)
}

// Event is one thing that happens at a logical time.
type Event struct {
	// T is the resolved logical time.
	T int64
	// TExpr is the time as the file wrote it ("arrival+5", "1070").
	TExpr  string
	Actor  string
	Action Action
	// Heartbeat names the message of every action that has one: the
	// heartbeat of heartbeat.send, heartbeat.deliver and heartbeat.reply
	// (the file's heartbeat: field), and the write of write.send and
	// write.deliver (the file's message: field). Heartbeats and writes
	// share one namespace, so the name alone identifies the message.
	Heartbeat string
	// Snapshot optionally overrides the cached lease a heartbeat carries.
	Snapshot *Lease
	// Fence is set for write events: the fence the write carries.
	Fence *int64
	// Value is the JSON value an effect, write or write.send carries.
	Value json.RawMessage
	// Note is an optional line the scenario author adds to the narration.
	Note string
	// Ask is an optional question put to the viewer before the step runs;
	// nil when the event asks nothing.
	Ask *Ask
	// Index is the event's position in the file, for error messages and ties.
	Index int
	// Pos is "line:column" of the event in its file, when known.
	Pos string
}

// Window is the logical-time range the timeline shows.
type Window struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Expectation is what a scenario promises for the knob settings it matches.
type Expectation struct {
	Renewal     string // a Renewal or "*"
	Fencing     string // a Fencing or "*"
	Effects     int
	Verdict     string
	Coordinator *Lease
	Resource    *ExpectedResource
	Pos         string
}

// ExpectedResource pins the resource's final epoch and, optionally, value.
type ExpectedResource struct {
	Fence int64
	Value json.RawMessage
}

// Matches reports whether the expectation covers k.
func (e Expectation) Matches(k Knobs) bool {
	return (e.Renewal == "*" || e.Renewal == string(k.Renewal)) &&
		(e.Fencing == "*" || e.Fencing == string(k.Fencing))
}

// Scenario is a validated, time-resolved scenario.
type Scenario struct {
	Name        string
	Title       string
	Description string
	// Source is where it came from: "builtin" or a file path.
	Source string
	// Lease is the coordinator row's key (a parameter, never SQL text).
	Lease  string
	Window Window
	TTL    int64
	// Times are the named times events may refer to; explore varies them.
	Times map[string]int64
	// Initial coordinator row; nil means the leases table starts empty.
	Initial  *Lease
	Resource ResourceState
	// Events sorted by time, ties kept in file order.
	Events []Event
	Expect []Expectation
	// goals are the file's own goals; Goals falls back to DefaultGoals.
	goals []Goal
	// raw keeps the unresolved form so times can be varied and re-resolved.
	raw *file
}

// Start is the earliest logical time of the scenario: the window's start
// or its first event, whichever is earlier.
func (s *Scenario) Start() int64 {
	if len(s.Events) > 0 && s.Events[0].T < s.Window.From {
		return s.Events[0].T
	}
	return s.Window.From
}

// Actors lists every actor named in the scenario, initial owner first, then
// in order of first appearance.
func (s *Scenario) Actors() []string {
	seen := map[string]bool{}
	var out []string
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	if s.Initial != nil {
		add(s.Initial.Owner)
	}
	for _, e := range s.Events {
		add(e.Actor)
	}
	return out
}

// ExpectationFor returns the expectation matching k, if the scenario has one.
func (s *Scenario) ExpectationFor(k Knobs) (Expectation, bool) {
	for _, e := range s.Expect {
		if e.Matches(k) {
			return e, true
		}
	}
	return Expectation{}, false
}

// TimeNames lists the scenario's named times in sorted order.
func (s *Scenario) TimeNames() []string {
	names := make([]string, 0, len(s.Times))
	for n := range s.Times {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WithTimes returns a copy of the scenario with some named times changed and
// every event time re-resolved. Unknown names are an error.
func (s *Scenario) WithTimes(set map[string]int64) (*Scenario, error) {
	if s.raw == nil {
		return nil, fmt.Errorf("scenario %s cannot vary its times", s.Name)
	}
	for n := range set {
		if _, ok := s.Times[n]; !ok {
			return nil, fmt.Errorf("scenario %s has no time named %q (it has %v)", s.Name, n, s.TimeNames())
		}
	}
	return build(s.raw, s.Source, set)
}
