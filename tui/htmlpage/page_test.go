package htmlpage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/lanes"
)

// maxPageSize is the bound for a typical run's page.
const maxPageSize = 300 << 10

// refAttr finds every attribute that makes a browser load something.
var refAttr = regexp.MustCompile(`(?i)\b(src|href|xlink:href|action|poster|data)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)

// offline reports what in a page would reach the network.
func offline(page []byte) []string {
	var bad []string
	for _, m := range refAttr.FindAllSubmatch(page, -1) {
		v := strings.ToLower(strings.Trim(string(m[2]), `"'`))
		if strings.Contains(v, "http:") || strings.Contains(v, "https:") || strings.HasPrefix(v, "//") {
			bad = append(bad, string(m[0]))
		}
	}
	lower := bytes.ToLower(page)
	for _, s := range []string{"@import", "url(http", "url(//", "<link", "<iframe", "fetch(", "xmlhttprequest"} {
		if bytes.Contains(lower, []byte(s)) {
			bad = append(bad, s)
		}
	}
	return bad
}

// Every shipped run of every built-in scenario under all six settings
// makes a page that is offline, small, reads back as the same transcript,
// and draws a lane per actor and the clock, one mark per move, each mark
// the one its move's result calls for.
func TestEveryShippedRunMakesAPage(t *testing.T) {
	for _, name := range scenario.BuiltinNames() {
		for _, k := range scenario.AllKnobs() {
			t.Run(name+"/"+k.String(), func(t *testing.T) {
				tr, err := engine.ShippedTranscript(name, k)
				if err != nil {
					t.Fatal(err)
				}
				page, err := Render(tr)
				if err != nil {
					t.Fatal(err)
				}
				checkPage(t, tr, page)
			})
		}
	}
}

func checkPage(t *testing.T, tr transcript.Transcript, page []byte) {
	t.Helper()
	if len(page) > maxPageSize {
		t.Errorf("page is %d bytes, over %d", len(page), maxPageSize)
	}
	if bad := offline(page); len(bad) > 0 {
		t.Errorf("the page reaches the network: %q", bad)
	}
	back, err := transcript.Read(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not read back as a transcript: %v", err)
	}
	want, _ := json.Marshal(tr)
	got, _ := json.Marshal(back)
	if !bytes.Equal(want, got) {
		t.Errorf("the embedded transcript differs from the run's:\n got %s\nwant %s", got, want)
	}
	if d, err := back.ComputeDigest(); err != nil || d != tr.Digest {
		t.Errorf("embedded digest recomputes as %s (%v), want %s", d, err, tr.Digest)
	}
	s := string(page)
	actors := map[string]bool{}
	for _, st := range tr.Steps {
		actors[st.Actor] = true
	}
	for a := range actors {
		if !strings.Contains(s, fmt.Sprintf(`data-lane="%s"`, a)) {
			t.Errorf("no lane for %s", a)
		}
	}
	if n := strings.Count(s, `<g class="mark `); n != len(tr.Steps) {
		t.Errorf("%d marks for %d moves", n, len(tr.Steps))
	}
	// Each mark is the lane model's for its move, and whatever else the
	// model says, a move whose write the resource accepted stale is marked
	// stale: the danger the page exists to show.
	d := diagramOf(tr, nil)
	effects := 0
	for i, st := range tr.Steps {
		want := kindOf(d.Moves[i].Mark)
		if n := len(st.Resource.Effects); n > effects && st.Resource.Effects[n-1].Judgement == scenario.JudgedConflict && want != "stale" {
			t.Errorf("step %d (%s %s) made a write accepted stale, but its mark is %s", i+1, st.Actor, st.Action, want)
		}
		effects = len(st.Resource.Effects)
		if !strings.Contains(s, fmt.Sprintf(`data-step="%d" data-kind="%s"`, i, want)) {
			t.Errorf("step %d (%s %s, %s): want a %s mark", i+1, st.Actor, st.Action, st.Result, want)
		}
	}
	for _, m := range lanes.Marks() {
		k := kindOf(m)
		if strings.Contains(s, fmt.Sprintf(`data-kind="%s"`, k)) && !strings.Contains(s, fmt.Sprintf(`<li class="k-%s`, k)) {
			t.Errorf("mark %s is on the page but not in the legend", k)
		}
	}
	for _, w := range []string{strings.ToUpper(tr.Outcome.Verdict), "fence", "lease_version", "the resource's highest fence accepted", tr.Digest} {
		if !strings.Contains(strings.ReplaceAll(s, "&#39;", "'"), w) {
			t.Errorf("the page does not say %q", w)
		}
	}
	for _, st := range tr.Steps {
		if st.Tag != "" && !strings.Contains(s, ">"+st.Tag+"<") {
			t.Errorf("command tag %q of step at %d is not on the page", st.Tag, st.T)
		}
	}
}

// paused-holder under compare/off: A's write at 1080 is accepted but
// stale, the danger the page jumps to, and the page says UPDATE 1 and
// CONFLICT.
func TestPausedHolderMarksTheStaleWrite(t *testing.T) {
	tr, err := engine.ShippedTranscript("paused-holder", scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingOff})
	if err != nil {
		t.Fatal(err)
	}
	page, err := Render(tr)
	if err != nil {
		t.Fatal(err)
	}
	d := diagramOf(tr, nil)
	last := d.Moves[len(d.Moves)-1]
	if d.Lanes[last.Lane].Name != "A" || last.Mark != lanes.Stale || last.T != 1080 {
		t.Errorf("last move %+v in lane %s, want A's stale write at 1080", last, d.Lanes[last.Lane].Name)
	}
	s := string(page)
	for _, w := range []string{"UPDATE 1", "CONFLICT", ">STALE</text>", ">ACCEPTED</text>", fmt.Sprintf(`id="danger" data-step="%d"`, last.Index)} {
		if !strings.Contains(s, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
}

// A message is drawn from its send to its arrival, or to where it was
// lost; a heartbeat that went stale in flight is drawn stale.
func TestMessagesRunFromSendToArrival(t *testing.T) {
	tr, err := engine.ShippedTranscript("renewal-race", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff})
	if err != nil {
		t.Fatal(err)
	}
	d := diagramOf(tr, nil)
	if len(d.Messages) != 1 {
		t.Fatalf("messages %+v, want hb1 alone", d.Messages)
	}
	m := d.Messages[0]
	// hb1: sent at 1055 (move 0), delivered at 1075 (move 4), stale in
	// flight from the expiry on.
	if m.ID != "hb1" || m.Send != 0 || m.End != 4 || m.Lost || !staleInFlight(tr, m) {
		t.Errorf("hb1 drawn as %+v (stale %v)", m, staleInFlight(tr, m))
	}
	svg := svgOf(d, tr)
	if !strings.Contains(svg, `<g class="msg stale" data-msg="hb1" data-from="0" data-to="4">`) {
		t.Errorf("the SVG does not draw hb1 stale from move 1 to move 5:\n%s", svg)
	}
	if k := d.Moves[4].Mark; k != lanes.Regressed {
		t.Errorf("the blind delivery that took the row back to fence 1 is marked %v, want regressed", k)
	}

	// A dropped message ends at the drop, lost.
	dropped := tr
	dropped.Steps = append([]transcript.Step(nil), tr.Steps...)
	drop := dropped.Steps[4]
	drop.Action, drop.SQL, drop.Tag, drop.Rows, drop.Result = scenario.ActionDrop, "", "", 0, transcript.ResultNoCall
	drop.Coordinator = dropped.Steps[3].Coordinator
	dropped.Steps[4] = drop
	dd := diagramOf(dropped, nil)
	if dm := dd.Messages[0]; dm.End != 4 || !dm.Lost {
		t.Errorf("a dropped hb1 drawn as %+v, want lost at move 5", dm)
	}
	if !strings.Contains(svgOf(dd, dropped), "✕ lost") {
		t.Error("the SVG does not say the dropped message is lost")
	}
}
