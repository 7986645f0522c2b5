package scenario_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/scenario"
)

func TestRevokedWriterFixturesFollowTheVariant(t *testing.T) {
	for _, n := range []int64{1, 2, 3, 7} {
		fx, err := scenario.RevokedWriterFixtures(n)
		if err != nil {
			t.Fatal(err)
		}
		e := 10 * n
		if len(fx) != 6 {
			t.Fatalf("variant %d: %d fixtures", n, len(fx))
		}
		if fx[0].Check != "late revoked writer" || fx[0].Initial.Epoch != e || fx[0].Writes[0].Epoch != e-1 {
			t.Fatalf("variant %d: %+v", n, fx[0])
		}
		if fx[3].Expected.Epoch != e+3 {
			t.Fatalf("variant %d multiple handoffs: %+v", n, fx[3])
		}
		last := fx[5]
		if last.Initial.Epoch != 0 || string(last.Initial.Value) != "null" || string(last.Expected.Value) != itoa(n) {
			t.Fatalf("variant %d zero-epoch fixture: %+v", n, last)
		}
	}
	for _, bad := range []int64{0, -1, scenario.MaxVariant + 1} {
		if _, err := scenario.RevokedWriterFixtures(bad); err == nil {
			t.Fatalf("variant %d accepted", bad)
		}
	}
}

func TestParseFixtures(t *testing.T) {
	good := `[{"check":"big","initial":[9007199254740993,"a"],"writes":[[9007199254740993,{"k":[1,null]}]],"expected":[9007199254740993,{"k":[1,null]}]}]`
	fx, err := scenario.ParseFixtures("f.json", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if fx[0].Initial.Epoch != 9007199254740993 {
		t.Fatalf("epoch lost precision: %d", fx[0].Initial.Epoch)
	}
	out, _ := json.Marshal(fx[0])
	if !strings.Contains(string(out), `"initial":[9007199254740993,"a"]`) {
		t.Fatalf("round trip: %s", out)
	}
	cases := []struct{ src, want string }{
		{`[{"check":"neg","initial":[-1,null],"writes":[],"expected":[0,null]}]`, `fixture 0 ("neg"): initial: epoch -1 is negative`},
		{`[{"check":"frac","initial":[1,null],"writes":[[1.5,"x"]],"expected":[0,null]}]`, `fixture 0 ("frac"): writes[0]: epoch 1.5 is not a whole number`},
		{`[{"check":"huge","initial":[1,null],"writes":[[99999999999999999999,"x"]],"expected":[0,null]}]`, `does not fit in a signed 64-bit integer`},
		{`[{"check":"str","initial":["7",null],"writes":[],"expected":[0,null]}]`, `epoch "7" is not an integer`},
		{`[{"check":"a","initial":[1,null],"writes":[],"expected":[1,null]},{"check":"a","initial":[1,null],"writes":[],"expected":[1,null]}]`, `fixture 1 ("a"): same check name as fixture 0`},
		{`[{"initial":[1,null],"writes":[],"expected":[1,null]}]`, `fixture 0: missing check`},
		{`[{"check":"x","initial":[1,null],"expected":[1,null]}]`, `missing writes`},
		{`[{"check":"x","initial":[1],"writes":[],"expected":[1,null]}]`, `want [epoch, value]`},
		{`[{"check":"x","initial":[1,null],"writes":[],"expected":[1,null],"extra":1}]`, `unknown field "extra"`},
		{`{"check":"x"}`, `want a JSON list of fixtures {"check","initial","writes","expected"}: found a JSON object`},
		{``, `want a JSON list of fixtures {"check","initial","writes","expected"}: the file is empty`},
		{`[{"check":"x"`, `the JSON ends too soon`},
		{`null`, `no fixtures: want a JSON list of at least one`},
		{`[]`, `no fixtures: want a JSON list of at least one`},
		{`[[1,2]]`, `fixture 0: want an object with check, initial, writes and expected: found a JSON array`},
		{`[{"check":"x","initial":[1,null],"writes":{},"expected":[1,null]}]`, `fixture 0: want an object with check, initial, writes and expected: writes is a JSON object`},
		{`[{"check":5}]`, `fixture 0: want an object with check, initial, writes and expected: check is a JSON number`},
		{`[] []`, `unexpected data after`},
	}
	for _, c := range cases {
		_, err := scenario.ParseFixtures("f.json", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "f.json: ") {
			t.Errorf("ParseFixtures(%s)\n error %v\n want it to contain %q", c.src, err, c.want)
		}
		// The file's terms, never Go's.
		if err != nil && strings.Contains(err.Error(), "Go ") {
			t.Errorf("ParseFixtures(%s): %v names Go's types", c.src, err)
		}
	}
}

func TestParseEpochBoundaries(t *testing.T) {
	for _, ok := range []string{"0", "1", "9007199254740993", "9223372036854775807"} {
		if _, err := scenario.ParseEpoch(json.RawMessage(ok)); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"-1", "9223372036854775808", "1.0", "1e3", `"1"`, "null", "", "true", "[1]"} {
		if _, err := scenario.ParseEpoch(json.RawMessage(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFixtureValuesNestAtMostMaxValueDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + `"x"` + strings.Repeat("]", n) }
	fixture := func(initial, write string) string {
		return `[{"check":"deep","initial":[1,` + initial + `],"writes":[[2,` + write + `]],"expected":[2,` + write + `]}]`
	}
	fx, err := scenario.ParseFixtures("f.json", []byte(fixture(nest(scenario.MaxValueDepth), nest(scenario.MaxValueDepth))))
	if err != nil {
		t.Fatalf("values %d levels deep: %v", scenario.MaxValueDepth, err)
	}
	if got := string(fx[0].Writes[0].Value); got != nest(scenario.MaxValueDepth) {
		t.Fatalf("value %s", got)
	}
	for _, c := range []struct{ src, want string }{
		{fixture(nest(scenario.MaxValueDepth+1), `1`), `f.json: fixture 0 ("deep"): initial: value nests more than 64 levels deep`},
		{fixture(`1`, nest(scenario.MaxValueDepth+1)), `f.json: fixture 0 ("deep"): writes[0]: value nests more than 64 levels deep`},
	} {
		if _, err := scenario.ParseFixtures("f.json", []byte(c.src)); err == nil || err.Error() != c.want {
			t.Errorf("got %v\nwant %s", err, c.want)
		}
	}
}
