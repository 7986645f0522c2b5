package scenario_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/goccy/go-yaml/lexer"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/scenario"
)

func TestBuiltinsLoadAndCoverEverySetting(t *testing.T) {
	names := scenario.BuiltinNames()
	want := []string{
		"renewal-race", "control", "busy-holder", "revoked-writer",
		"paused-holder", "river-reelect", "slow-renewal", "zombie-producer",
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("built-ins = %v, want %v", names, want)
	}
	for _, n := range names {
		s, err := scenario.Builtin(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		for _, k := range scenario.AllKnobs() {
			if _, ok := s.ExpectationFor(k); !ok {
				t.Errorf("%s has no expectation for %s", n, k)
			}
		}
		for i := 1; i < len(s.Events); i++ {
			if s.Events[i].T < s.Events[i-1].T {
				t.Errorf("%s: events not sorted at %d", n, i)
			}
		}
		// Every built-in asks at its pivotal steps.
		if !slices.ContainsFunc(s.Events, func(e scenario.Event) bool { return e.Ask != nil }) {
			t.Errorf("%s asks no question", n)
		}
	}
	// The stories from real incidents name where they come from.
	for n, src := range map[string]string{
		"paused-holder":   "Martin Kleppmann, \"How to do distributed locking\" (2016)",
		"river-reelect":   "riverqueue/river #197, fixed by #199",
		"slow-renewal":    "riverqueue/river #216, fixed by #217",
		"zombie-producer": "Apache Kafka's transactional producer (KIP-98",
	} {
		s, err := scenario.Builtin(n)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s.Description, "Source: "+src) {
			t.Errorf("%s's description should start by naming its source, %q: %q", n, src, s.Description)
		}
	}
}

func TestRenewalRaceTimeline(t *testing.T) {
	s, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	if s.Window != (scenario.Window{From: 1060, To: 1135}) || s.TTL != 60 {
		t.Fatalf("window %v ttl %d", s.Window, s.TTL)
	}
	if *s.Initial != (scenario.Lease{Owner: "A", Fence: 1, LeaseVersion: 1, ExpiresAt: 1060}) {
		t.Fatalf("initial %+v", *s.Initial)
	}
	var got []string
	for _, e := range s.Events {
		got = append(got, strings.Join([]string{e.Actor, string(e.Action)}, " ")+"@"+itoa(e.T))
	}
	want := "A heartbeat.send@1055,clock expire@1060,B acquire@1070,B effect@1070,A heartbeat.deliver@1075,A effect@1080"
	if strings.Join(got, ",") != want {
		t.Fatalf("timeline\n got %s\nwant %s", strings.Join(got, ","), want)
	}
	if got := s.Actors(); strings.Join(got, ",") != "A,clock,B" {
		t.Fatalf("actors %v", got)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestWithTimesReresolvesAndResorts(t *testing.T) {
	s, _ := scenario.Builtin("renewal-race")
	v, err := s.WithTimes(map[string]int64{"arrival": 1065})
	if err != nil {
		t.Fatal(err)
	}
	// The heartbeat now lands before the takeover, and A's effect follows it.
	var order []string
	for _, e := range v.Events {
		order = append(order, string(e.Action)+"@"+itoa(e.T))
	}
	want := "heartbeat.send@1055,expire@1060,heartbeat.deliver@1065,acquire@1070,effect@1070,effect@1070"
	if strings.Join(order, ",") != want {
		t.Fatalf("got %s\nwant %s", strings.Join(order, ","), want)
	}
	if s.Times["arrival"] != 1075 {
		t.Fatal("WithTimes changed the original scenario")
	}
	if _, err := s.WithTimes(map[string]int64{"nope": 1}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown time name: %v", err)
	}
	if _, err := s.WithTimes(map[string]int64{"arrival": -5}); err == nil {
		t.Fatal("negative time accepted")
	}
}

func TestMalformedFilesNameLineAndColumn(t *testing.T) {
	base := "name: x\nwindow: {from: 1, to: 5}\nttl: 3\n"
	okTail := "events:\n  - {t: 1, actor: A, action: write, epoch: 1}\nexpect:\n  - {renewal: '*', fencing: '*', effects: 1, verdict: safe}\n"
	cases := []struct {
		name, src, want string
	}{
		{"unknown field", base + "bogus: 1\n" + okTail, "x.yaml:4:1: unknown field \"bogus\""},
		{"syntax", "name: x\nwindow: {from: 1, to: 5}\nttl: [3\n", "x.yaml:3:"},
		{"wrong type", "name: x\nwindow: {from: 1, to: 5}\nttl: abc\n" + okTail, "x.yaml:3:6: ttl: want a whole number, found \"abc\""},
		// The decoder alone would truncate these to whole numbers.
		{"fraction where a whole number belongs", "name: x\nwindow: {from: 1, to: 5}\nttl: 1.5\n" + okTail, "x.yaml:3:6: ttl: want a whole number, found \"1.5\""},
		{"quoted number", "name: x\nwindow: {from: 1, to: 5}\nttl: \"3\"\n" + okTail, "x.yaml:3:6: ttl: want a whole number, found \"3\""},
		{"fraction in a named time", base + "times: {arrival: 2.5}\n" + okTail, "x.yaml:4:18: arrival: want a whole number, found \"2.5\""},
		{"fraction in a window", "name: x\nwindow: {from: 1, to: 5.0}\nttl: 3\n" + okTail, "x.yaml:2:23: to: want a whole number, found \"5.0\""},
		{"fraction in a write's epoch", base + "events:\n  - {t: 1, actor: A, action: write, epoch: 1.5}\n", "epoch: want a whole number, found \"1.5\""},
		{"list where text belongs", "name: [1]\nwindow: {from: 1, to: 5}\nttl: 3\n" + okTail, "x.yaml:1:7: name: want text, found a list"},
		{"number where a mapping belongs", "name: x\nwindow: 5\nttl: 3\n" + okTail, "x.yaml:2:9: window: want a mapping, found a whole number"},
		{"unknown time", base + "events:\n  - {t: foo, actor: A, action: write, epoch: 1}\n", "x.yaml:5:9: event 0: t \"foo\" names \"foo\""},
		{"bad action", base + "events:\n  - {t: 1, actor: A, action: explode}\n", "x.yaml:5:30: event 0: action \"explode\""},
		{"negative epoch", base + "events:\n  - {t: 1, actor: A, action: write, epoch: -1}\n", "x.yaml:5:44: event 0: epoch -1"},
		{"missing expectation", base + "events:\n  - {t: 1, actor: A, action: write, epoch: 1}\nexpect:\n  - {renewal: blind, fencing: '*', effects: 1, verdict: safe}\n", "no expectation for renewal compare with fencing off"},
		{"double expectation", base + "events:\n  - {t: 1, actor: A, action: write, epoch: 1}\nexpect:\n  - {renewal: '*', fencing: '*', effects: 1, verdict: safe}\n  - {renewal: blind, fencing: strict, effects: 1, verdict: safe}\n", "x.yaml:8:5: expect[0] and expect[1] both match renewal blind with fencing strict"},
		{"deliver before send", base + "initial:\n  coordinator: {owner: A, fence: 1, lease_version: 1, expires_at: 4}\nevents:\n  - {t: 1, actor: A, action: heartbeat.deliver, heartbeat: h}\n  - {t: 2, actor: A, action: heartbeat.send, heartbeat: h}\n", "heartbeat h is delivered at 1 but not sent before then"},
		{"acquire without row", base + "events:\n  - {t: 1, actor: B, action: acquire}\n", "initial.coordinator must declare it"},
		{"bad verdict", base + "events:\n  - {t: 1, actor: A, action: write, epoch: 1}\nexpect:\n  - {renewal: '*', fencing: '*', effects: 1, verdict: maybe}\n", "verdict \"maybe\""},
		{"not a mapping", "- 1\n- 2\n", "x.yaml:1:1: want a mapping"},
		{"empty", "", "want exactly one YAML document"},
		{"bad window", "name: x\nwindow: {from: 9, to: 5}\nttl: 3\n" + okTail, "x.yaml:2:9: window 9..5"},
		{"bad name", "name: 'Robert; DROP TABLE leases'\nwindow: {from: 1, to: 5}\nttl: 3\n" + okTail, "x.yaml:1:7: name"},
		{"alias", base + "events:\n  - &e {t: 1, actor: A, action: write, epoch: 1}\n  - *e\n", "x.yaml:6:5: YAML aliases"},
		// A tagged mapping where the event list belongs crashed the YAML
		// decoder (found by fuzzing); tags of any kind are refused first.
		{"tag on the event list", base + "events: !x {t: 1, actor: A, action: write, epoch: 1}\n", "x.yaml:4:9: YAML tags"},
		{"tag inside the list", base + "events:\n !- {t: 1, actor: A, action: write, epoch: 1}\n", "x.yaml:5:2: YAML tags"},
		{"standard tag on a scalar", base + "events:\n  - {t: 1, actor: !!str A, action: write, epoch: 1}\n" + okTail[len("events:\n  - {t: 1, actor: A, action: write, epoch: 1}\n"):], "x.yaml:5:19: YAML tags"},
		{"tag on the document", "!doc\n" + base + okTail, "x.yaml:1:1: YAML tags"},
		{"bad actor", base + "events:\n  - {t: 1, actor: \"A'); DROP\", action: write, epoch: 1}\n", "actor \"A'); DROP\""},
		// A missing field is reported where its mapping is, and a block
		// mapping where its first key starts.
		{"missing actor", base + "events:\n  - {t: 1, action: write, epoch: 1}\n", "x.yaml:5:5: event 0: actor \"\""},
		{"block-style event without its fence", base + "events:\n  - t: 1\n    actor: A\n    action: write\n", "x.yaml:5:5: event 0: write needs fence"},
		// fence: is the key; epoch:, its old name, is still read, but not
		// beside it.
		{"negative fence", base + "events:\n  - {t: 1, actor: A, action: write, fence: -1}\n", "x.yaml:5:44: event 0: fence -1: fences are nonnegative"},
		{"fence and epoch at once", base + "events:\n  - {t: 1, actor: A, action: write, fence: 1, epoch: 1}\n", "x.yaml:5:54: fence and epoch are one value (epoch is its old name): give fence only"},
		{"fence where none belongs", base + "initial:\n  coordinator: {owner: A, fence: 1, lease_version: 1, expires_at: 4}\nevents:\n  - {t: 1, actor: A, action: effect, fence: 1}\n", "x.yaml:7:45: event 0: fence is only for write (effect uses the actor's fence)"},
		{"initial resource without its fence", base + "initial:\n  resource: {value: 1}\n" + okTail, "x.yaml:5:13: initial.resource needs fence"},
		{"negative initial fence", base + "initial:\n  resource: {fence: -2}\n" + okTail, "x.yaml:5:21: fence -2: fences are nonnegative"},
		{"expected resource with both", base + "events:\n  - {t: 1, actor: A, action: write, fence: 1}\nexpect:\n  - {renewal: '*', fencing: '*', effects: 1, verdict: safe, resource: {fence: 1, epoch: 1}}\n", "fence and epoch are one value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenario.Parse("x.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.src)
			}
			var se *scenario.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *scenario.Error: %v", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, c.want)
			}
			// In YAML's words, never Go's types.
			for _, goWord := range []string{"interface {}", "int64", "Go struct", "Go value"} {
				if strings.Contains(err.Error(), goWord) {
					t.Errorf("error %q names Go's %q", err, goWord)
				}
			}
		})
	}
}

func TestAliasBombIsRefusedQuickly(t *testing.T) {
	// Each level doubles the expansion ten times over: expanded, it would
	// never finish. Refused, it costs a parse.
	var b strings.Builder
	b.WriteString("a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	start := time.Now()
	_, err := scenario.Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases") {
		t.Fatalf("alias bomb: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("alias bomb took %v to refuse", d)
	}
}

func TestLoadFileAndLoad(t *testing.T) {
	dir := t.TempDir()
	src, _ := scenario.BuiltinSource("control")
	p := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(p, src, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(p)
	if err != nil || s.Name != "control" || s.Source != p {
		t.Fatalf("Load(file) = %v, %v", s, err)
	}
	if _, err := scenario.Load("no-such-scenario"); err == nil || !strings.Contains(err.Error(), "built-ins: renewal-race") {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := scenario.Load(dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("directory: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, scenario.MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Load(big); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("big file: %v", err)
	}
}

func TestKnobHelpers(t *testing.T) {
	if len(scenario.AllKnobs()) != 6 {
		t.Fatal("want six settings")
	}
	if scenario.FencingOff.Next() != scenario.FencingStrict || scenario.FencingMonotonic.Next() != scenario.FencingOff {
		t.Fatal("fencing cycle")
	}
	if scenario.RenewalBlind.Toggle() != scenario.RenewalCompare || scenario.RenewalCompare.Toggle() != scenario.RenewalBlind {
		t.Fatal("renewal toggle")
	}
	if _, err := scenario.ParseFencing("strong"); err == nil || !strings.Contains(err.Error(), "off, strict or monotonic") {
		t.Fatalf("ParseFencing: %v", err)
	}
}

// A deeply nested file is refused before the YAML parser, whose time grows
// with the square of the depth, ever sees it; a value may nest up to
// MaxValueDepth levels and no more, and the refusal says where.
func TestDeepNestingIsRefusedQuickly(t *testing.T) {
	head := "name: x\nwindow: {from: 0, to: 10}\nttl: 5\nevents:\n"
	tail := "expect:\n  - {renewal: '*', fencing: '*', effects: 1, verdict: safe}\n"
	event := func(value string) string {
		return head + "  - {t: 1, actor: A, action: write, epoch: 1, value: " + value + "}\n" + tail
	}
	flow := func(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }
	fill := scenario.MaxFileSize - len(event(""))
	cases := []struct{ name, src, want string }{
		{"value one level too deep", event(flow(scenario.MaxValueDepth + 1)), "x.yaml:5:54: event 0: value: nests more than 64 levels deep"},
		{"300 flow levels", event(flow(300)), "x.yaml:5:"},
		{"a file full of brackets", event(flow((fill - 1) / 2)), "nests more than"},
		{"a file of opening brackets", event(strings.Repeat("[", fill)), "nests more than"},
		{"mappings in flow", event(strings.Repeat("{a: ", 2000) + "1" + strings.Repeat("}", 2000)), "nests more than"},
		{"compact sequences", head + "  - " + strings.Repeat("- ", fill/2) + "x\n" + tail, "nests more than"},
		{"document of compact sequences", strings.Repeat("- ", 200000) + "x\n", "x.yaml:1:"},
		{"indented mappings", head + "  - t: 1\n    actor: A\n    action: write\n    epoch: 1\n    value:\n" + indented(1400) + tail, "nests more than 64 levels deep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.src) > scenario.MaxFileSize {
				t.Fatalf("test input is %d bytes, over the file limit", len(c.src))
			}
			// parseWithin fails the test past its limit; before the guard,
			// the bigger of these took minutes. The limit scales with how
			// long lexing the same bytes takes here (the guard's linear
			// part), so a loaded machine does not fail a correct parser.
			_, err := parseWithin(t, "x.yaml", []byte(c.src), max(parseLimit, 20*lexTime(c.src)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			var se *scenario.Error
			if !errors.As(err, &se) || se.Line == 0 {
				t.Fatalf("refusal without a position: %v", err)
			}
		})
	}
	// At the limit it is accepted, and the value arrives whole.
	s, err := scenario.Parse("x.yaml", []byte(event(flow(scenario.MaxValueDepth))))
	if err != nil {
		t.Fatalf("a value %d levels deep: %v", scenario.MaxValueDepth, err)
	}
	if got := string(s.Events[0].Value); got != flow(scenario.MaxValueDepth) {
		t.Fatalf("value %s", got)
	}
}

// lexTime is how long the YAML lexer alone takes on src: linear work
// that any parse of src includes.
func lexTime(src string) time.Duration {
	t0 := time.Now()
	lexer.Tokenize(src)
	return time.Since(t0)
}

// indented nests n block mappings, each one column deeper than the last.
func indented(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sa:\n", strings.Repeat(" ", 6+i))
	}
	fmt.Fprintf(&b, "%s1\n", strings.Repeat(" ", 6+n))
	return b.String()
}

// A file that gives the resource's fences under epoch:, their key's old
// name, loads as the same scenario as one that says fence:: every built-in
// with its initial resource, writes and expected resources rewritten so.
func TestFenceKeyReadsItsOldName(t *testing.T) {
	key := regexp.MustCompile(`(resource: \{|action: write, )fence:`)
	rewritten := 0
	for _, name := range scenario.BuiltinNames() {
		src, err := assets.FS.ReadFile("scenarios/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		old := key.ReplaceAll(src, []byte("${1}epoch:"))
		if string(old) == string(src) {
			continue
		}
		rewritten++
		now, err := scenario.Parse(name+".yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		was, err := scenario.Parse(name+".yaml", old)
		if err != nil {
			t.Fatalf("%s with epoch: keys: %v", name, err)
		}
		a, errA := json.Marshal(now)
		b, errB := json.Marshal(was)
		if errA != nil || errB != nil || string(a) != string(b) || !reflect.DeepEqual(now.Goals(), was.Goals()) {
			t.Errorf("%s loads otherwise with epoch: keys (%v, %v):\n%s\n%s", name, errA, errB, a, b)
		}
	}
	if rewritten < len(scenario.BuiltinNames()) {
		t.Errorf("only %d of %d built-ins give a fence to rewrite", rewritten, len(scenario.BuiltinNames()))
	}
}

// A built-in's file, which scenarios --show prints as it is, comments and
// all, calls the fence a fence: "epoch" stays only in Kafka's "producer
// epoch", which zombie-producer names beside the fence.
func TestBuiltinFilesCallTheFenceAFence(t *testing.T) {
	kafka := regexp.MustCompile(`producer\s+epoch`)
	for _, name := range scenario.BuiltinNames() {
		src, err := assets.FS.ReadFile("scenarios/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(kafka.ReplaceAllString(string(src), ""), "\n") {
			if strings.Contains(strings.ToLower(line), "epoch") {
				t.Errorf("%s.yaml:%d says epoch: %q", name, i+1, line)
			}
		}
	}
}
