package scenario_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/scenario"
)

// asking is a scenario whose one event, on line 8, asks ask.
func asking(event, ask string) string {
	return withEvents(strings.TrimSuffix(event, "}") + ", ask: " + ask + "}")
}

const deliver = "{t: 2, actor: A, action: heartbeat.deliver, heartbeat: hb1}"

// withSend puts the send of hb1 before the asking delivery, on line 8; the
// asking event is then on line 9.
func withSend(ask string) string {
	return withEvents("{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
		strings.TrimSuffix(deliver, "}")+", ask: "+ask+"}")
}

func TestAskIsValidated(t *testing.T) {
	effect := "{t: 1, actor: A, action: effect}"
	pause := "{t: 1, actor: A, action: pause}"
	checkRefusals(t, []refusal{
		{"unknown about", asking(effect, "{question: Q?, about: colour, choices: [a, b]}"), 8, "colour", `ask about "colour": want one of tag, result, verdict, owner or accepted`},
		{"no about", asking(effect, "{question: Q?, choices: [a, b]}"), 8, "{question", "ask needs about: tag, result, verdict, owner or accepted"},
		{"no question", asking(effect, "{about: result, choices: [done, refused]}"), 8, "{about", "ask needs question"},
		{"blank question", asking(effect, "{question: '  ', about: result, choices: [done, refused]}"), 8, "{question", "ask needs question"},
		{"one choice", asking(effect, "{question: Q?, about: result, choices: [done]}"), 8, "{question", "ask offers 1 under choices:; want 2 to 6"},
		{"no choices", asking(effect, "{question: Q?, about: result}"), 8, "{question", "ask offers 0 under choices:; want 2 to 6"},
		{"seven choices", asking(effect, "{question: Q?, about: owner, choices: [A, B, C, D, E, F, G]}"), 8, "{question", "ask offers 7 under choices:"},
		{"a choice twice", asking(effect, "{question: Q?, about: accepted, choices: [yes, no, yes]}"), 8, "yes]", `choice "yes" is offered twice`},
		{"an empty choice", asking(effect, "{question: Q?, about: tag, choices: [UPDATE 1, '']}"), 8, "''", "choice 2 is empty"},
		{"a null choice", asking(effect, "{question: Q?, about: tag, choices: [UPDATE 1, null]}"), 8, "null", "choice 2 is empty"},
		{"a long choice", asking(effect, "{question: Q?, about: owner, choices: [A, "+strings.Repeat("x", 33)+"]}"), 8, "xxx", "is 33 characters; at most 32"},
		{"a long question", asking(effect, "{question: "+strings.Repeat("q", 201)+", about: result, choices: [done, refused]}"), 8, "qqq", "question is 201 characters; at most 200"},
		{"an escape sequence in the question", asking(effect, `{question: "clear\u001b[2J", about: result, choices: [done, refused]}`), 8, `"clear`, "control character (U+001B)"},
		{"a line break in a choice", asking(effect, `{question: Q?, about: owner, choices: [A, "B\nC"]}`), 8, `"B\n`, "control character (U+000A)"},
		{"a result that cannot be", asking(effect, "{question: Q?, about: result, choices: [done, maybe]}"), 8, "maybe", `choice "maybe" can never be right: a question about result is answered "done", "refused" or "no call"`},
		{"accepted is yes or no", asking(effect, "{question: Q?, about: accepted, choices: [true, false]}"), 8, "true", `choice "true" can never be right: a question about accepted is answered "yes" or "no"`},
		{"a verdict that cannot be", asking(effect, "{question: Q?, about: verdict, choices: [safe, unsafe]}"), 8, "unsafe", `a question about verdict is answered "conflict", "blocked" or "safe"`},
		{"a tag as nobody writes it", withSend("{question: Q?, about: tag, choices: [UPDATE 1, update 0]}"), 9, "update 0", "a command tag is written as the server sends it"},
		{"a pause has no tag", asking(pause, "{question: Q?, about: tag, choices: [UPDATE 1, UPDATE 0]}"), 8, "tag", "pause sends no statement, so it has no command tag to ask about; ask about result, verdict or owner"},
		{"an acquire writes nothing", withEvents("{t: 1, actor: B, action: acquire, ask: {question: Q?, about: accepted, choices: [yes, no]}}"), 8, "accepted", "acquire writes nothing to the resource, so it has no accepted write to ask about; ask about result, verdict, owner or tag"},
		{"an owner who is not in the scenario", asking(effect, "{question: Q?, about: owner, choices: [A, Z]}"), 8, "Z]", `choice "Z" can never be right: the owner is one of the scenario's actors, A`},
		{"an owner with no lease row", "name: x\nwindow: {from: 0, to: 100}\nttl: 50\nevents:\n  - {t: 1, actor: A, action: write, epoch: 1, ask: {question: Q?, about: owner, choices: [A, B]}}\n" + tail,
			5, "owner", "the lease row never exists in this scenario"},
		// The right answer depends on the knobs, so the file cannot hold it.
		{"no answer field", asking(effect, "{question: Q?, about: accepted, choices: [yes, no], answer: yes}"), 8, "answer", `unknown field "answer"`},
	})
}

func TestAskRight(t *testing.T) {
	s, err := scenario.LoadFile("testdata/every-action.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var asks []*scenario.Ask
	for _, ev := range s.Events {
		if ev.Ask != nil {
			asks = append(asks, ev.Ask)
		}
	}
	if len(asks) != 4 {
		t.Fatalf("%d questions, want 4", len(asks))
	}
	tag := asks[0]
	if tag.About != scenario.AboutTag || tag.Question != "A's lease is still current. What will PostgreSQL answer?" ||
		!slices.Equal(tag.Choices, []string{"UPDATE 1", "UPDATE 0"}) || tag.Pos != "35:7" {
		t.Fatalf("ask %+v", *tag)
	}
	for _, c := range []struct {
		ask     *scenario.Ask
		fact    string
		want    string
		matched bool
	}{
		{tag, "UPDATE 0", "UPDATE 0", true},
		{tag, "UPDATE 1", "UPDATE 1", true},
		{tag, "UPDATE 2", "", false},
		{tag, "", "", false}, // no statement ran: no choice is right
		{asks[1], "B", "B", true},
		{asks[2], scenario.ResultNoCall, "no call", true},
		{asks[3], scenario.AcceptedNo, "no", true},
		{asks[3], "No", "", false},
	} {
		got, ok := c.ask.Right(c.fact)
		if got != c.want || ok != c.matched {
			t.Errorf("%s question, fact %q: Right = %q, %v; want %q, %v", c.ask.About, c.fact, got, ok, c.want, c.matched)
		}
	}
	// The closed lists are the vocabulary Right is called with.
	if v := scenario.AboutResult.Values(); !slices.Equal(v, []string{scenario.ResultDone, scenario.ResultRefused, scenario.ResultNoCall}) {
		t.Errorf("result values %v", v)
	}
	if v := scenario.AboutVerdict.Values(); !slices.Equal(v, scenario.Verdicts()) {
		t.Errorf("verdict values %v", v)
	}
	if scenario.AboutTag.Values() != nil || scenario.AboutOwner.Values() != nil {
		t.Error("tag and owner are open vocabularies")
	}
}

func TestGoalsAreValidated(t *testing.T) {
	goals := func(lines ...string) string {
		src := withEvents("{t: 1, actor: A, action: effect}") + "goals:\n"
		for _, l := range lines {
			src += "  - " + l + "\n"
		}
		return src
	}
	// withEvents' one event ends on line 10 (8 event, 9-10 expect); goals start on 12.
	many := make([]string, scenario.MaxGoals+1)
	for i := range many {
		many[i] = "{id: g" + strings.Repeat("x", i) + ", text: T, when: conflict}"
	}
	checkRefusals(t, []refusal{
		{"unknown predicate", goals("{id: g, text: T, when: chaos}"), 12, "chaos", `goal 0: when "chaos": want one of conflict, blocked, two-holders, resurrected, stale-renewal or zero-rows`},
		{"no predicate", goals("{id: g, text: T}"), 12, "{id", `goal 0: when ""`},
		{"duplicate id", goals("{id: g, text: T, when: conflict}", "{id: g, text: U, when: blocked}"), 13, "g,", "goal 1: id g is goal 0's already"},
		{"empty text", goals("{id: g, text: '', when: conflict}"), 12, "{id", "goal 0: needs text"},
		{"no text", goals("{id: g, when: conflict}"), 12, "{id", "goal 0: needs text"},
		{"bad id", goals("{id: Stale Write, text: T, when: conflict}"), 12, "Stale", `goal 0: id "Stale Write"`},
		{"no id", goals("{text: T, when: conflict}"), 12, "{text", `goal 0: id ""`},
		{"text with an escape", goals(`{id: g, text: "a\u001b[31mb", when: conflict}`), 12, `"a`, "control character"},
		{"too many goals", goals(many...), 12, "-", "13 goals; at most 12"},
	})
}

func TestGoals(t *testing.T) {
	s, err := scenario.LoadFile("testdata/every-action.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := s.Goals()
	want := []scenario.Goal{
		{ID: "stale-write", Text: "The resource accepts A's stale write", When: scenario.GoalConflict, Pos: "61:5"},
		{ID: "two-holders", Text: "A and B both believe they hold the lease", When: scenario.GoalTwoHolders, Pos: "62:5"},
		{ID: "refused-renewal", Text: "The coordinator refuses a renewal", When: scenario.GoalZeroRows, Pos: "63:5"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("goals\n got %+v\nwant %+v", got, want)
	}
	got[0].Text = "changed"
	if s.Goals()[0].Text == "changed" {
		t.Fatal("Goals hands out the scenario's own slice")
	}

	// A scenario without goals has the defaults: a stale write, a lost
	// valid write, two holders.
	plain, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	var whens []scenario.Predicate
	for _, g := range plain.Goals() {
		whens = append(whens, g.When)
		if g.ID == "" || g.Text == "" || g.Pos != "" {
			t.Errorf("default goal %+v", g)
		}
	}
	if !slices.Equal(whens, []scenario.Predicate{scenario.GoalConflict, scenario.GoalBlocked, scenario.GoalTwoHolders}) {
		t.Errorf("default goals %v", whens)
	}
	for _, g := range scenario.DefaultGoals() {
		if !slices.Contains(scenario.Predicates(), g.When) {
			t.Errorf("default goal %s uses %q, not a predicate", g.ID, g.When)
		}
	}
}
