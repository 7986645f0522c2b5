package scenario_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/scenario/fixtures"
)

// Values are shown to people: &, < and > must come out as typed, not as
// \u0026, \u003c and \u003e (json.Marshal's HTML escaping).
func TestValuesKeepAmpersandsAndAngleBrackets(t *testing.T) {
	sc, err := scenario.Parse("amp.yaml", []byte(`name: amp
window: {from: 0, to: 10}
ttl: 60
initial:
  resource: {epoch: 0, value: {note: "a<b>&c"}}
events:
  - {t: 1, actor: W, action: write, epoch: 1, value: "Tom & Jerry <3>"}
expect:
  - {renewal: "*", fencing: "*", effects: 1, verdict: safe}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(sc.Events[0].Value), `"Tom & Jerry <3>"`; got != want {
		t.Errorf("event value %s, want %s", got, want)
	}
	if got, want := string(sc.Resource.Value), `{"note":"a<b>&c"}`; got != want {
		t.Errorf("initial value %s, want %s", got, want)
	}

	fx := []fixtures.Fixture{{Check: "a&b", Initial: fixtures.Write{Fence: 1, Value: json.RawMessage(`"<x>"`)}, Writes: []fixtures.Write{{Fence: 2, Value: json.RawMessage(`"&"`)}}}}
	b, err := scenario.MarshalPlain(fx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `[{"check":"a&b","initial":[1,"<x>"],"writes":[[2,"&"]],"expected":[0,null]}]`; got != want {
		t.Errorf("fixtures written as\n%s\nwant\n%s", got, want)
	}
	back, err := fixtures.ParseFixtures("fixtures.json", b)
	if err != nil {
		t.Fatalf("written fixtures read back: %v", err)
	}
	if string(back[0].Writes[0].Value) != `"&"` {
		t.Errorf("fixture value read back as %s", back[0].Writes[0].Value)
	}
}

func TestCheckDepth(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat(`{"a":[`, n/2) + strings.Repeat("[", n%2) + "1" + strings.Repeat("]", n%2) + strings.Repeat("]}", n/2)
	}
	for _, limit := range []int{1, 2, 3, 7, scenario.MaxValueDepth} {
		if err := scenario.CheckDepth([]byte(nest(limit)), limit); err != nil {
			t.Errorf("%d levels refused at a limit of %d: %v", limit, limit, err)
		}
		err := scenario.CheckDepth([]byte(nest(limit+1)), limit)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d levels", limit)) {
			t.Errorf("%d levels at a limit of %d: %v", limit+1, limit, err)
		}
	}
	// Brackets inside strings are text, escaped quotes included; siblings
	// do not add up.
	for _, ok := range []string{``, `1`, `"[[[[{{{{"`, `["\"[[[[", "\\", "{{{"]`, `[[1],[2],[3],[4]]`, `{"[": {"{": 1}}`} {
		if err := scenario.CheckDepth([]byte(ok), 2); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if err := scenario.CheckDepth([]byte(`["\\",[["x"]]]`), 2); err == nil {
		t.Error(`an escaped backslash before a closing quote hid three levels`)
	}
}
