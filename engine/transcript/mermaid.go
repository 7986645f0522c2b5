package transcript

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/leaserace/leaserace/scenario"
)

// Participant ids for the two systems every scenario talks to.
const (
	mmdCoordinator = "Coordinator"
	mmdResource    = "Resource"
)

// windowColour tints the steps during which a heartbeat travels with an
// epoch that is no longer current.
const windowColour = "rgb(255, 228, 225)"

// mmdPlainID is an actor name Mermaid can use as a participant id as is.
var mmdPlainID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// mmdKeyword reports whether Mermaid's sequence grammar reserves a word
// (or this writer uses it as an id); an actor named like one gets an alias.
func mmdKeyword(s string) bool {
	switch strings.ToLower(s) {
	case "actor", "alt", "and", "as", "autonumber", "box", "break", "create",
		"critical", "deactivate", "activate", "destroy", "else", "end", "left",
		"link", "links", "loop", "note", "opt", "option", "over", "par",
		"participant", "rect", "right", "title", "sequencediagram",
		"coordinator", "resource":
		return true
	}
	return false
}

// WriteMermaid writes the transcript as a Mermaid sequence diagram: the
// actors, the coordinator and the resource as participants, one arrow per
// call (-x when the call was refused: zero rows or HTTP 409), notes with
// times, rows affected and fences, and the span in which a heartbeat
// travels with a stale epoch tinted. It uses only the transcript's digested
// content, so the same run draws the same diagram anywhere.
func WriteMermaid(w io.Writer, t Transcript) error {
	d := newMermaid(t)
	d.write()
	if _, err := io.WriteString(w, d.b.String()); err != nil {
		return fmt.Errorf("cannot write the Mermaid diagram: %w", err)
	}
	return nil
}

type mermaid struct {
	t   Transcript
	b   strings.Builder
	ids map[string]string // actor → participant id
	// order lists the participants left to right, labels the actors whose
	// id is not their name.
	order  []string
	labels map[string]string
	// window marks the steps inside a stale-heartbeat window.
	window []bool
}

func newMermaid(t Transcript) *mermaid {
	d := &mermaid{t: t, ids: map[string]string{}, labels: map[string]string{}}
	actors := transcriptActors(t)
	usesCoord, usesRes := t.Initial.Coordinator != nil, false
	for _, s := range t.Steps {
		switch s.Action {
		case scenario.ActionAcquire, scenario.ActionDeliver, scenario.ActionExpire:
			usesCoord = true
		case scenario.ActionEffect, scenario.ActionWrite:
			usesRes = true
		}
	}
	n := 0
	for _, a := range actors {
		id := a
		if !mmdPlainID.MatchString(a) || mmdKeyword(a) {
			// An alias no actor is named, for a name Mermaid cannot take.
			for id = ""; id == "" || slices.Contains(actors, id); {
				n++
				id = fmt.Sprintf("actor%d", n)
			}
			d.labels[id] = a
		}
		d.ids[a] = id
	}
	// The initial owner stands left of the coordinator and everyone else
	// right of it, so the takeover and the late heartbeat cross the middle.
	for i, a := range actors {
		d.order = append(d.order, d.ids[a])
		if i == 0 && usesCoord {
			d.order = append(d.order, mmdCoordinator)
		}
	}
	if len(actors) == 0 && usesCoord {
		d.order = append(d.order, mmdCoordinator)
	}
	if usesRes {
		d.order = append(d.order, mmdResource)
	}
	d.window = staleWindow(t.Steps)
	return d
}

// transcriptActors lists who acts, the initial owner first and then in order
// of first appearance; the clock is not an actor.
func transcriptActors(t Transcript) []string {
	var out []string
	add := func(a string) {
		if a != "" && a != "clock" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if c := t.Initial.Coordinator; c != nil {
		add(c.Owner)
	}
	for _, s := range t.Steps {
		add(s.Actor)
	}
	return out
}

// staleWindow marks each step taken while a heartbeat in flight carries an
// epoch that is no longer current, and the step that delivers it.
func staleWindow(steps []Step) []bool {
	in := make([]bool, len(steps))
	var prevStale []string
	for i, s := range steps {
		stale := staleIDs(s.InFlight)
		in[i] = len(stale) > 0 ||
			(s.Action == scenario.ActionDeliver && slices.Contains(prevStale, s.Heartbeat))
		prevStale = stale
	}
	return in
}

func staleIDs(flight []Message) []string {
	var ids []string
	for _, m := range flight {
		if m.Stale {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

func (d *mermaid) line(indent int, format string, args ...any) {
	d.b.WriteString(strings.Repeat("    ", indent))
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteByte('\n')
}

func (d *mermaid) write() {
	t := d.t
	d.line(0, "%%%% leaserace %s, %s", t.Scenario, t.Digest)
	d.line(0, "sequenceDiagram")
	d.line(1, "title %s", mmdText(fmt.Sprintf("%s: renewal %s, fencing %s", t.Scenario, t.Knobs.Renewal, t.Knobs.Fencing)))
	for _, id := range d.order {
		switch id {
		case mmdCoordinator:
			d.line(1, "participant %s as Coordinator (PostgreSQL)", id)
		case mmdResource:
			d.line(1, "participant %s as Resource (HTTP)", id)
		default:
			if label, ok := d.labels[id]; ok {
				d.line(1, "participant %s as %s", id, mmdText(label))
			} else {
				d.line(1, "participant %s", id)
			}
		}
	}
	if len(d.order) == 0 {
		// A diagram needs someone to hold the notes.
		d.order = []string{mmdCoordinator}
		d.line(1, "participant %s as Coordinator (PostgreSQL)", mmdCoordinator)
	}
	d.line(1, "Note over %s: %s", d.span(), mmdText(d.initialWords()))

	prev := t.Initial.Coordinator
	for i, s := range t.Steps {
		indent := 1
		if d.window[i] {
			indent = 2
			if i == 0 || !d.window[i-1] {
				d.line(1, "rect %s", windowColour)
				d.line(2, "Note over %s: %s", d.span(), mmdText(d.windowWords(i)))
			}
		}
		d.step(indent, i, s, prev)
		if d.window[i] && (i == len(t.Steps)-1 || !d.window[i+1]) {
			d.line(1, "end")
		}
		prev = s.Coordinator
	}
	d.line(1, "Note over %s: %s", d.span(), mmdText(d.outcomeWords()))
}

// span is "first,last": a note across the whole diagram.
func (d *mermaid) span() string {
	if len(d.order) == 1 {
		return d.order[0]
	}
	return d.order[0] + "," + d.order[len(d.order)-1]
}

func (d *mermaid) initialWords() string {
	in := d.t.Initial
	s := "start: "
	if in.Coordinator != nil {
		s += "lease " + in.Coordinator.String()
	} else {
		s += "no lease row"
	}
	return s + fmt.Sprintf(" · the resource's highest fence accepted %d, value %s", in.Resource.Fence, ValueWords(in.Resource.Value))
}

// windowWords names the stale heartbeats of the window starting at step i
// and the times it spans.
func (d *mermaid) windowWords(i int) string {
	steps := d.t.Steps
	j := i
	var ids []string
	for ; j < len(steps) && d.window[j]; j++ {
		for _, id := range staleIDs(steps[j].InFlight) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	from, to := steps[i].T, steps[j-1].T
	span := fmt.Sprintf("%d to %d", from, to)
	if from == to {
		span = fmt.Sprintf("at %d", from)
	}
	verb := "is"
	if len(ids) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("stale window, %s: %s %s in flight with a lease that is no longer current", span, strings.Join(ids, ", "), verb)
}

func (d *mermaid) outcomeWords() string {
	o := d.t.Outcome
	s := fmt.Sprintf("outcome: %s / %s", plural(o.Effects, "effect"), strings.ToUpper(o.Verdict))
	if o.Rejected > 0 {
		s += fmt.Sprintf(", %d refused", o.Rejected)
	}
	if o.Blocked > 0 {
		s += fmt.Sprintf(" (%s blocked: strict fencing is the unsuccessful fix)", plural(o.Blocked, "valid write"))
	}
	if o.Coordinator != nil {
		s += " · coordinator " + o.Coordinator.String()
	}
	return s + fmt.Sprintf(" · the resource's stored fence %d, value %s", o.Resource.Fence, ValueWords(o.Resource.Value))
}

// step draws one step: an arrow for what was sent, a note for what it did.
func (d *mermaid) step(in, i int, s Step, prev *scenario.Lease) {
	who := d.ids[s.Actor]
	switch {
	case s.Action == scenario.ActionExpire:
		d.line(in, "Note over %s: %s", d.span(), mmdText(fmt.Sprintf("%d clock: %s", s.T, expiryWords(s))))
	case s.Action == scenario.ActionAdvance:
		// The clock is no participant: its notes span the whole diagram.
		d.line(in, "Note over %s: %s", d.span(), mmdText(fmt.Sprintf("%d clock moves on: %s", s.T, expiryWords(s))))
	case s.Action == scenario.ActionSend:
		d.send(in, i, who, s)
	case s.Action == scenario.ActionDeliver && s.SQL != "":
		m := d.sentMessage(s.Heartbeat)
		what := fmt.Sprintf("%d %s arrives", s.T, s.Heartbeat)
		if m != nil {
			what += fmt.Sprintf(" (sent %d)", m.Sent)
		}
		d.line(in, "%s%s%s: %s", who, rowsArrow(s.Rows), mmdCoordinator, mmdText(what+": "+d.t.Knobs.Renewal.Describe()))
		note := coordWords(s, prev)
		if s.Rows == 0 && m != nil {
			note += fmt.Sprintf(" · refused: %s's fence %d, lease_version %d is not current", m.Snapshot.Owner, m.Snapshot.Fence, m.Snapshot.LeaseVersion)
		}
		d.line(in, "Note over %s: %s", mmdCoordinator, mmdText(note))
	case (s.Action == scenario.ActionAcquire || s.Action == scenario.ActionReelect) && s.SQL != "":
		d.line(in, "%s%s%s: %s", who, rowsArrow(s.Rows), mmdCoordinator, mmdText(fmt.Sprintf("%d %s", s.T, s.Action.Verb())))
		d.line(in, "Note over %s: %s", mmdCoordinator, mmdText(coordWords(s, prev)))
	case s.Call != nil && len(s.Resource.Effects) > 0:
		d.call(in, who, s)
	default:
		// No call was made (no lease to act on, a message never sent):
		// the engine's narration says why.
		d.line(in, "Note over %s: %s", d.over(who), mmdText(fmt.Sprintf("%d %s", s.T, s.Note)))
	}
}

// over is where a note about one participant goes: over it, or over
// every participant when the step has none of its own (the clock's).
func (d *mermaid) over(who string) string {
	if who == "" {
		return d.span()
	}
	return who
}

func (d *mermaid) send(in, at int, who string, s Step) {
	i := slices.IndexFunc(s.InFlight, func(m Message) bool { return m.ID == s.Heartbeat })
	if i < 0 {
		d.line(in, "Note over %s: %s", d.over(who), mmdText(fmt.Sprintf("%d %s", s.T, s.Note)))
		return
	}
	m := s.InFlight[i]
	arrow, how := "--)", ""
	switch {
	case m.Due < 0:
		arrow, how = "--x", ", lost in the network"
	case m.Due > m.Sent:
		how = ", delayed"
	}
	note := fmt.Sprintf("%d %s carries %s", m.Sent, m.ID, m.Snapshot.String())
	if d.t.IsPlayed() {
		// A played run: what became of it is the moves' to say, not the
		// script's due time.
		arrow, how = "--)", ""
		j := d.t.fate(at, m)
		switch {
		case j < 0:
			how = ", still in flight at the end"
		case d.t.Steps[j].Action == scenario.ActionDrop:
			arrow, how = "--x", ", lost in the network"
		case d.t.Steps[j].T > m.Sent:
			how = ", delayed"
		}
		note += " · " + d.t.fateWords(at, m)
	} else if m.Due > m.Sent {
		note += fmt.Sprintf(" · the network holds it until %d", m.Due)
	}
	d.line(in, "%s%s%s: %s", who, arrow, mmdCoordinator, mmdText(fmt.Sprintf("%s (sent %d%s)", m.ID, m.Sent, how)))
	d.line(in, "Note over %s: %s", who, mmdText(note))
}

// sentMessage finds the message a heartbeat.deliver step delivered, as the
// steps before it saw it in flight.
func (d *mermaid) sentMessage(id string) *Message {
	for _, s := range d.t.Steps {
		for _, m := range s.InFlight {
			if m.ID == id {
				return &m
			}
		}
	}
	return nil
}

// call draws a write to the resource and what the resource answered.
func (d *mermaid) call(in int, who string, s Step) {
	e := s.Resource.Effects[len(s.Resource.Effects)-1]
	token := "fence"
	arrow := "->>"
	if !s.Call.Accepted {
		arrow = "-x"
	}
	d.line(in, "%s%s%s: %s", who, arrow, mmdResource, mmdText(fmt.Sprintf("%d %s %s %s %d, %s", s.T, s.Call.Method, s.Call.Path, token, e.Fence, ValueWords(e.Value))))
	accepted := 0
	for _, x := range s.Resource.Effects {
		if x.Accepted {
			accepted++
		}
	}
	var note string
	if s.Call.Accepted {
		note = fmt.Sprintf("%d accepted · stored fence %d → %d · effects: %d", s.Call.Status, e.StoredFence, s.Resource.Fence, accepted)
	} else {
		note = fmt.Sprintf("%d refused: %s · stored fence stays %d · effects: %d", s.Call.Status, s.Call.Reason, s.Resource.Fence, accepted)
	}
	switch e.Judgement {
	case scenario.JudgedConflict:
		note += " · CONFLICT: a stale write reached the resource"
	case scenario.JudgedBlocked:
		note += " · BLOCKED: a valid write was lost"
	}
	d.line(in, "Note over %s: %s", mmdResource, mmdText(note))
}

// rowsArrow is a plain arrow for a statement that changed a row and a
// crossed one for zero rows: the coordinator refused.
func rowsArrow(rows int64) string {
	if rows == 0 {
		return "-x"
	}
	return "->>"
}

// coordWords is what a coordinator statement did: its tag and rows, the
// row after it, and what the statement changed in it.
func coordWords(s Step, prev *scenario.Lease) string {
	w := fmt.Sprintf("%s, %s", s.Tag, plural(int(s.Rows), "row"))
	cur := s.Coordinator
	if cur == nil {
		return w + " · no lease row"
	}
	if s.Rows == 0 {
		return w + " · still " + cur.String()
	}
	w += " · now " + cur.String()
	if prev == nil {
		return w
	}
	var ch []string
	if prev.Owner != cur.Owner {
		ch = append(ch, fmt.Sprintf("owner %s → %s", prev.Owner, cur.Owner))
	}
	switch {
	case cur.Fence < prev.Fence:
		ch = append(ch, fmt.Sprintf("fence regressed %d → %d", prev.Fence, cur.Fence))
	case cur.Fence > prev.Fence:
		ch = append(ch, fmt.Sprintf("fence %d → %d", prev.Fence, cur.Fence))
	default:
		ch = append(ch, fmt.Sprintf("fence %d kept", cur.Fence))
	}
	if prev.LeaseVersion != cur.LeaseVersion {
		ch = append(ch, fmt.Sprintf("lease_version %d → %d", prev.LeaseVersion, cur.LeaseVersion))
	}
	if prev.ExpiresAt != cur.ExpiresAt {
		ch = append(ch, fmt.Sprintf("expires %d → %d", prev.ExpiresAt, cur.ExpiresAt))
	}
	return w + " (" + strings.Join(ch, ", ") + ")"
}

func expiryWords(s Step) string {
	c := s.Coordinator
	switch {
	case c == nil:
		return "no lease row, nothing expires"
	case c.ExpiresAt <= s.T:
		return fmt.Sprintf("%s's lease (fence %d) expired at %d", c.Owner, c.Fence, c.ExpiresAt)
	}
	return fmt.Sprintf("%s's lease is live until %d", c.Owner, c.ExpiresAt)
}

// mmdText makes s safe as Mermaid text: one line, and the characters the
// sequence grammar treats specially written as entity codes (# first, as
// the codes themselves use it).
func mmdText(s string) string {
	return strings.NewReplacer(
		"#", "#35;", ";", "#59;", "<", "#60;", ">", "#62;",
		"\r\n", " ", "\n", " ", "\r", " ",
	).Replace(s)
}
