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
	actors[scenario.ClockActor] = true
	for a := range actors {
		if !strings.Contains(s, fmt.Sprintf(`data-lane="%s"`, a)) {
			t.Errorf("no lane for %s", a)
		}
	}
	if n := strings.Count(s, `<g class="mark `); n != len(tr.Steps) {
		t.Errorf("%d marks for %d moves", n, len(tr.Steps))
	}
	effects := 0
	for i, st := range tr.Steps {
		want := markDone
		switch st.Result {
		case transcript.ResultRefused:
			want = markRefused
		case transcript.ResultNoCall:
			want = markNoCall
		}
		if n := len(st.Resource.Effects); n > effects {
			switch st.Resource.Effects[n-1].Judgement {
			case scenario.JudgedConflict:
				want = markStale
			case scenario.JudgedBlocked:
				want = markBlocked
			}
		}
		effects = len(st.Resource.Effects)
		prev := tr.Initial.Coordinator
		if i > 0 {
			prev = tr.Steps[i-1].Coordinator
		}
		if want == markDone && prev != nil && st.Coordinator != nil && st.Coordinator.Fence < prev.Fence {
			want = markRegressed
		}
		if !strings.Contains(s, fmt.Sprintf(`data-step="%d" data-kind="%s"`, i, want)) {
			t.Errorf("step %d (%s %s, %s): want a %s mark", i+1, st.Actor, st.Action, st.Result, want)
		}
	}
	for _, k := range markKinds() {
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
	d := laneModel(tr)
	last := d.Marks[len(d.Marks)-1]
	if d.Lanes[last.Lane] != "A" || last.Kind != markStale || tr.Steps[last.Step].T != 1080 {
		t.Errorf("last mark %+v in lane %s, want A's stale write at 1080", last, d.Lanes[last.Lane])
	}
	s := string(page)
	for _, w := range []string{"UPDATE 1", "CONFLICT", "STALE ACCEPTED", fmt.Sprintf(`id="danger" data-step="%d"`, last.Step)} {
		if !strings.Contains(s, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
}

// A message is drawn from its send to its arrival, or to where it was
// lost; a heartbeat that went stale in flight is marked stale.
func TestMessagesRunFromSendToArrival(t *testing.T) {
	tr, err := engine.ShippedTranscript("renewal-race", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff})
	if err != nil {
		t.Fatal(err)
	}
	d := laneModel(tr)
	if len(d.Messages) != 1 {
		t.Fatalf("messages %+v, want hb1 alone", d.Messages)
	}
	m := d.Messages[0]
	// hb1: sent at 1055 (step 0), stale from the takeover (the expiry at
	// step 1 already), delivered at 1075 (step 4).
	if m.ID != "hb1" || m.From != 0 || m.To != 4 || m.Lost || m.StaleAt != 1 {
		t.Errorf("hb1 drawn as %+v", m)
	}
	if tr.Steps[m.To].Action != scenario.ActionDeliver {
		t.Errorf("hb1 arrives at %s, want its delivery", tr.Steps[m.To].Action)
	}
	if k := d.Marks[4].Kind; k != markRegressed {
		t.Errorf("the blind delivery that took the row back to fence 1 is marked %s, want regressed", k)
	}

	// A dropped message ends at the drop, lost.
	dropped := tr
	dropped.Steps = append([]transcript.Step(nil), tr.Steps...)
	drop := dropped.Steps[4]
	drop.Action, drop.SQL, drop.Tag, drop.Rows, drop.Result = scenario.ActionDrop, "", "", 0, transcript.ResultNoCall
	drop.Coordinator = dropped.Steps[3].Coordinator
	dropped.Steps[4] = drop
	dm := laneModel(dropped).Messages[0]
	if dm.To != 4 || !dm.Lost {
		t.Errorf("a dropped hb1 drawn as %+v, want lost at step 4", dm)
	}
	if !strings.Contains(svgOf(laneModel(dropped)), "✕ lost") {
		t.Error("the SVG does not say the dropped message is lost")
	}
}
