package screen

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/text"
)

// para is a paragraph of spans and the indents its lines start with.
type para struct {
	spans       []text.Span
	first, rest string
}

func p(spans ...text.Span) para { return para{spans: spans} }

// field is a "label value" paragraph whose continuation lines hang under
// the value.
func field(label string, lw int, spans ...text.Span) para {
	pad := strings.Repeat(" ", max(1, lw-text.Width(label)))
	return para{spans: spans, first: label + pad, rest: strings.Repeat(" ", text.Width(label)+len(pad))}
}

func layoutParas(ps []para, w int) []string {
	var out []string
	for _, x := range ps {
		out = append(out, text.Wrap(x.spans, w, x.first, x.rest)...)
	}
	return out
}

// box draws lines in a rounded border w cells wide, at least h lines
// inside, with the first title that fits in the top edge. Lines must
// already fit in w-4 cells.
func (m Screen) box(titles []string, lines []string, w, h int) []string {
	bs := &m.Styles.Border
	inner := max(0, w-4)
	top := text.Render(bs, "╭─")
	used := 3 // ╭─ and ╮
	for _, t := range titles {
		if tw := text.Width(t) + 2; used+tw <= w {
			top += " " + m.Styles.PaneHead.Render(t) + " "
			used += tw
			break
		}
	}
	top += text.Render(bs, strings.Repeat("─", max(0, w-used))+"╮")
	out := []string{top}
	left, right := text.Render(bs, "│")+" ", " "+text.Render(bs, "│")
	for i := range max(h, len(lines)) {
		l := ""
		if i < len(lines) {
			l = lines[i]
		}
		out = append(out, left+text.Fit(l, inner)+right)
	}
	return append(out, text.Render(bs, "╰"+strings.Repeat("─", max(0, w-2))+"╯"))
}

// panes: Coordinator, In flight and Resource side by side.
func (m Screen) panes(w int, l layout) []string {
	const n = 3
	if l.boxes {
		pw := w / n
		widths := []int{pw, pw, w - 2*pw}
		blocks := [][]string{
			m.coordinatorLines(widths[0]-4, true),
			m.flightLines(widths[1] - 4),
			m.resourceLines(widths[2]-4, true, l.paneMax),
		}
		h := 0
		for i, b := range blocks {
			if l.paneMax > 0 {
				blocks[i] = text.ClipSaying(b, l.paneMax, "e exports all")
			}
			h = max(h, len(blocks[i]))
		}
		titles := [][]string{{"Coordinator (PostgreSQL)", "Coordinator"}, {"In flight (network)", "In flight"}, {"Resource (HTTP + PostgreSQL)", "Resource"}}
		for i := range blocks {
			blocks[i] = m.box(titles[i], blocks[i], widths[i], h)
		}
		return text.HJoin("", widths, blocks...)
	}
	// Without borders: a heading per column and a rule between columns.
	sep := " " + text.Render(&m.Styles.Border, "│") + " "
	pw := (w - 2*3) / n
	widths := []int{pw, pw, w - 2*3 - 2*pw}
	heads := []string{"Coordinator", "In flight", "Resource"}
	blocks := [][]string{
		m.coordinatorLines(widths[0], false),
		m.flightLines(widths[1]),
		m.resourceLines(widths[2], false, l.paneMax),
	}
	for i, b := range blocks {
		if l.paneMax > 0 {
			b = text.ClipSaying(b, l.paneMax, "e exports all")
		}
		blocks[i] = append([]string{m.Styles.PaneHead.Render(heads[i])}, b...)
	}
	return text.HJoin(sep, widths, blocks...)
}

// coordinatorLines is the leases row after the step, with the fields the
// step changed highlighted and a fence that went down called a regression.
func (m Screen) coordinatorLines(w int, roomy bool) []string {
	st, s := m.Styles, m.Snap
	cur := s.View.Coordinator
	var prev *scenario.Lease
	changedAny := s.View.Pos > 0
	if changedAny {
		prev = s.prevCoordinator()
	}
	if cur == nil {
		ps := []para{p(text.Styled(&st.Faint, "no leases row"))}
		if prev != nil {
			ps = append(ps, p(text.Styled(&st.Warn, "⚠ the row is gone")))
		}
		if s.Scenario.Initial == nil && !hasAction(s.Scenario, scenario.ActionAcquire) {
			ps = append(ps, p(text.Styled(&st.Faint, "this scenario writes to the resource directly; no lease is involved")))
		}
		return layoutParas(ps, w)
	}
	names := [4]string{"owner", "fence", "lease_version", "expires_at"}
	lw := 14
	if w < 30 {
		// Narrow: shorter labels, but the lease_version keeps its one
		// name, sticking out of the column rather than going by another.
		names, lw = [4]string{"owner", "fence", "lease_version", "expires"}, 9
	}
	type fv struct {
		now, was string
	}
	vals := [4]fv{{now: cur.Owner}, {now: itoa(cur.Fence)}, {now: itoa(cur.LeaseVersion)}, {now: itoa(cur.ExpiresAt)}}
	if prev != nil {
		vals[0].was, vals[1].was, vals[2].was, vals[3].was = prev.Owner, itoa(prev.Fence), itoa(prev.LeaseVersion), itoa(prev.ExpiresAt)
	}
	var ps []para
	if roomy {
		ps = append(ps, p(text.Styled(&st.Faint, "leases row '"+s.Scenario.Lease+"'")))
	}
	for i, v := range vals {
		sp := changed(m, v.now, v.was, prev != nil)
		if i == 3 && cur.ExpiresAt <= s.View.Now {
			// Expiry is relative to the cursor, so say it in words.
			sp = append(sp, text.Styled(&st.Warn, " ⚠ expired"))
		}
		ps = append(ps, field(names[i], lw, sp...))
	}
	if prev != nil && cur.Fence < prev.Fence {
		ps = append(ps, p(text.Styled(&st.Warn, fmt.Sprintf("⚠ fence %d → %d: regressed", prev.Fence, cur.Fence))))
	}
	return layoutParas(ps, w)
}

// changed renders a value, highlighted with what it was when the last
// step changed it.
func changed(m Screen, now, was string, known bool) []text.Span {
	if !known || now == was {
		return []text.Span{text.Styled(&m.Styles.Value, now)}
	}
	return []text.Span{text.Styled(&m.Styles.Changed, now), text.Styled(&m.Styles.Faint, " (was "+was+")")}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func hasAction(sc *scenario.Scenario, a scenario.Action) bool {
	for _, e := range sc.Events {
		if e.Action == a {
			return true
		}
	}
	return false
}

// flightLines lists heartbeats on the network and whether each still
// carries the current epoch.
func (m Screen) flightLines(w int) []string {
	st, s := m.Styles, m.Snap
	var ps []para
	for _, msg := range s.View.InFlight {
		ps = append(ps, p(text.Styled(&st.Title, msg.ID), text.Plain(" from "+msg.From)))
		due := fmt.Sprintf("sent %d, due %d", msg.Sent, msg.Due)
		if msg.Due < 0 {
			// Nothing delivers it by itself; a move may still.
			due = fmt.Sprintf("sent %d, held: no delivery scheduled", msg.Sent)
		}
		ps = append(ps, para{spans: []text.Span{text.Plain(due)}, first: "  ", rest: "  "})
		sn := msg.Snapshot
		ps = append(ps, para{spans: []text.Span{text.Styled(&st.Faint, fmt.Sprintf("carries %s, fence %d, lease_version %d, expires %d", sn.Owner, sn.Fence, sn.LeaseVersion, sn.ExpiresAt))}, first: "  ", rest: "  "})
		if msg.Stale {
			ps = append(ps, para{spans: []text.Span{text.Styled(&st.Warn, "⚠ stale"), text.Plain(": " + msg.StaleReason)}, first: "  ", rest: "    "})
		} else {
			ps = append(ps, para{spans: []text.Span{text.Styled(&st.Good, "✓ current")}, first: "  ", rest: "  "})
		}
	}
	if len(ps) == 0 {
		ps = append(ps, p(text.Styled(&st.Faint, "nothing in flight")))
	}
	if last := s.Last(); last != nil && last.Action == scenario.ActionDeliver && last.Heartbeat != "" {
		what := "refused"
		if last.Rows > 0 {
			what = "applied"
		}
		ps = append(ps, p(text.Styled(&st.Faint, fmt.Sprintf("%s arrived at %d: %s (see SQL)", last.Heartbeat, last.T, what))))
	}
	return layoutParas(ps, w)
}

// resourceLines shows the resource's highest fence accepted and value and every effect, with
// the verdict spelled out.
// With limit > 0 it keeps to that many lines by dropping the oldest
// effects first, so the verdict is the last thing to go.
func (m Screen) resourceLines(w int, roomy bool, limit int) []string {
	st, s := m.Styles, m.Snap
	res := s.View.Resource
	lw := 7
	var ps []para
	known := s.View.Pos > 0
	wasEpoch, wasValue := s.prevResource()
	// The resource's highest fence accepted is what the fencing check and
	// the verdict compare with; the stored fence is shown apart only
	// where it fell below it (fencing off let an older fence in).
	high, wasHigh := s.highestAccepted()
	ps = append(ps, p(append([]text.Span{text.Styled(&st.Label, "highest fence accepted ")}, changed(m, itoa(high), itoa(wasHigh), known)...)...))

	value := changed(m, valueText(res.Value), valueText(wasValue), known)
	if !roomy && len(value) > 1 && text.Width(valueText(wasValue)) > 8 {
		// Tight: the old value is long and the epoch line already says
		// the state changed.
		value = value[:1]
	}
	ps = append(ps, field("value", lw, value...))
	switch {
	case known && res.Fence < wasEpoch:
		ps = append(ps, p(text.Styled(&st.Warn, fmt.Sprintf("⚠ regressed: stored %d → %d", wasEpoch, res.Fence))))
	case res.Fence != high:
		ps = append(ps, p(text.Styled(&st.Warn, fmt.Sprintf("⚠ regressed: stored %d", res.Fence))))
	}
	switch {
	case len(res.Effects) == 0:
		ps = append(ps, p(text.Styled(&st.Faint, "no effects yet")))
	case roomy:
		ps = append(ps, p(text.Styled(&st.Label, "effects")))
	}
	head := layoutParas(ps, w)
	var effects [][]string
	ps = nil
	// Every write carries a fence, from a lease or written in the move.
	token := "fence"
	for _, e := range res.Effects {
		what := fmt.Sprintf(" #%d %s %s %d", e.Seq, e.Actor, token, e.Fence)
		// The glyph and the words carry the contract's judgement, so the
		// pane reads without colour.
		switch {
		case e.Judgement == scenario.JudgedBlocked:
			sp := []text.Span{text.Styled(&st.Alarm, "⊘"), text.Plain(what + " refused: "), text.Styled(&st.Alarm, "BLOCKED"), text.Plain(", a valid write lost")}
			if roomy && e.Reason != "" {
				sp = append(sp, text.Plain(": "), text.Styled(&st.Faint, e.Reason))
			}
			effects = append(effects, text.Wrap(sp, w, "", "   "))
		case !e.Accepted:
			sp := []text.Span{text.Styled(&st.Good, "✗"), text.Plain(what + " refused")}
			if roomy && e.Reason != "" {
				// Tight screens leave the why to the narration.
				sp = append(sp, text.Plain(": "), text.Styled(&st.Faint, e.Reason))
			}
			effects = append(effects, text.Wrap(sp, w, "", "   "))
		case e.Judgement == scenario.JudgedConflict:
			effects = append(effects, text.Wrap([]text.Span{text.Styled(&st.Warn, "⚠"), text.Plain(what + " accepted "), text.Styled(&st.Warn, "after a newer "+token+": stale")}, w, "", "   "))
		default:
			effects = append(effects, text.Wrap([]text.Span{text.Styled(&st.Value, "✓"), text.Plain(what + " accepted")}, w, "", "   "))
		}
	}
	o := s.View.Outcome
	noun := "effects"
	if o.Effects == 1 {
		noun = "effect"
	}
	refused := ""
	if o.Rejected > 0 {
		refused = fmt.Sprintf(", %d refused", o.Rejected)
	}
	var verdict []string
	switch o.Verdict {
	case scenario.VerdictConflict:
		verdict = text.Wrap([]text.Span{text.Styled(&st.Warn, "⚠ "), text.Styled(&st.Alarm, fmt.Sprintf("%d %s / CONFLICT", o.Effects, noun)), text.Plain(refused)}, w, "", "")
	case scenario.VerdictBlocked:
		verdict = text.Wrap([]text.Span{text.Styled(&st.Alarm, fmt.Sprintf("⊘ %d %s / BLOCKED", o.Effects, noun)), text.Plain(refused)}, w, "", "")
		if b := blockedActor(res.Effects); b != "" {
			verdict = append(verdict, text.Wrap([]text.Span{text.Plain(b + "'s valid write refused: "), text.Styled(&st.Alarm, "blocked"), text.Plain(" — strict fencing is the unsuccessful fix")}, w, "", "")...)
		}
	default:
		verdict = text.Wrap([]text.Span{text.Styled(&st.Good, fmt.Sprintf("✓ %d %s / safe", o.Effects, noun)), text.Plain(refused)}, w, "", "")
	}
	n := len(head) + len(verdict)
	for _, e := range effects {
		n += len(e)
	}
	dropped := 0
	for limit > 0 && n > limit && dropped < len(effects) {
		// One "… N earlier: e exports" line stands in for what is dropped.
		if dropped == 0 {
			n++
		}
		n -= len(effects[dropped])
		dropped++
	}
	out := head
	if dropped > 0 {
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Faint, fmt.Sprintf("… %d earlier: e exports", dropped))}, w, "", "")...)
	}
	for _, e := range effects[dropped:] {
		out = append(out, e...)
	}
	return append(out, verdict...)
}

// blockedActor is the actor of the first valid write refused.
func blockedActor(effects []scenario.Effect) string {
	for _, e := range effects {
		if e.Judgement == scenario.JudgedBlocked {
			return e.Actor
		}
	}
	return ""
}

// valueText shows a JSON string value without its quotes' escaping noise.
func valueText(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return "null"
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strconv.Quote(s)
	}
	return string(v)
}

// tagWords says what a command tag reports, "one row read" for SELECT 1;
// "" for a tag it does not know or one the words after it explain.
func tagWords(tag string, rows int64) string {
	verb, _, _ := strings.Cut(tag, " ")
	what := map[string]string{"SELECT": "read", "UPDATE": "changed", "INSERT": "written", "DELETE": "deleted"}[verb]
	if what == "" || rows == 0 && verb == "UPDATE" {
		return ""
	}
	return transcript.RowsWords(rows) + " " + what
}

// sqlSection is the statement the last step ran, its arguments and the
// server's command tag, with zero rows explained.
func (m Screen) sqlSection(w int, l layout) []string {
	st, s := m.Styles, m.Snap
	last := s.Last()
	inner := w
	if l.boxes {
		inner = w - 4
	}
	var head string
	var ps []para
	if last == nil {
		head = "SQL"
		first := "No statement yet: → runs the first event against PostgreSQL."
		switch {
		case m.Replay != nil:
			first = "No statement yet: → shows the first recorded event and what PostgreSQL answered."
		case m.Play.On:
			first = "No statement yet: the move you choose runs its SQL against PostgreSQL."
		}
		ps = append(ps, p(text.Styled(&st.Faint, first)))
	} else {
		head = fmt.Sprintf("SQL · t=%d · %s", last.T, stepLabel(*last))
		ps = m.sqlParas(*last)
	}
	var lines []string
	if l.sqlMax > 0 && len(ps) > 0 && last != nil && last.SQL != "" {
		// Only the statement may be shortened; args and the tag stay.
		stmt := text.ClipSaying(layoutParas(ps[:1], inner), l.sqlMax, "e exports the full SQL")
		lines = append(stmt, layoutParas(ps[1:], inner)...)
	} else {
		lines = layoutParas(ps, inner)
	}
	if l.boxes {
		return m.box([]string{head, "SQL"}, lines, w, 0)
	}
	hl := text.Wrap([]text.Span{text.Styled(&st.PaneHead, head)}, w, "", "")
	return append(hl, lines...)
}

func stepLabel(s transcript.Step) string {
	who := s.Actor
	if who == "" {
		who = "the clock"
	}
	out := who + " " + string(s.Action)
	if s.Heartbeat != "" {
		out += " " + s.Heartbeat
	}
	return out
}

func (m Screen) sqlParas(s transcript.Step) []para {
	st := m.Styles
	if s.SQL == "" {
		why := "nothing reached PostgreSQL at this step"
		switch s.Action {
		case scenario.ActionSend:
			why = "the heartbeat is only on the network; PostgreSQL has not seen it yet"
		case scenario.ActionEffect:
			why = s.Actor + " made no call to the resource"
		}
		return []para{p(text.Styled(&st.Faint, "No statement: "+why+"."))}
	}
	ps := []para{p(text.Styled(&st.SQL, strings.Join(strings.Fields(s.SQL), " ")))}
	if len(s.Args) > 0 {
		var a []text.Span
		for i, v := range s.Args {
			if i > 0 {
				a = append(a, text.Plain(" "))
			}
			arg := argText(v)
			if s.Call != nil && i == 1 {
				// The resource's value argument is JSON, which a transcript
				// read back holds as a plain Go value: show it as JSON,
				// live or recorded alike.
				arg = jsonArgText(v)
			}
			a = append(a, text.Styled(&st.Faint, fmt.Sprintf("$%d=", i+1)), text.Plain(arg))
		}
		ps = append(ps, para{spans: a, first: "args ", rest: "     "})
	}
	tag := []text.Span{text.Styled(&st.Tag, s.Tag)}
	if w := tagWords(s.Tag, s.Rows); w != "" {
		// The server's answer, not a statement: say what it reports.
		tag = append(tag, text.Styled(&st.Faint, " ("+w+")"))
	}
	if s.Rows == 0 && strings.HasPrefix(s.Tag, "UPDATE") {
		switch s.Action {
		case scenario.ActionDeliver:
			tag = append(tag, text.Styled(&st.Good, " — zero rows: the stale heartbeat was refused"))
		case scenario.ActionAcquire:
			tag = append(tag, text.Styled(&st.Faint, " — zero rows: the lease is still held"))
		default:
			tag = append(tag, text.Styled(&st.Good, " — zero rows: the resource refused the write"))
		}
	}
	if c := s.Call; c != nil {
		verdict := "accepted"
		if !c.Accepted {
			verdict = "refused"
		}
		tag = append(tag, text.Styled(&st.Faint, fmt.Sprintf(" · %s %s → %d %s", c.Method, c.Path, c.Status, verdict)))
	}
	return append(ps, para{spans: tag, first: "→ ", rest: "  "})
}

// argText prints one SQL argument the way psql would quote it.
func argText(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + x + "'"
	case json.RawMessage:
		return string(x)
	case []byte:
		return "'" + string(x) + "'"
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
	case nil:
		return "NULL"
	}
	return fmt.Sprint(v)
}

// jsonArgText shows a JSON argument as JSON text.
func jsonArgText(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		return string(raw)
	}
	b, err := scenario.MarshalPlain(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// narration is the last step's note, or the scenario's description before
// the first step.
// playStart is the state play mode starts from, in words: no story, the
// learner writes it.
func (m Screen) playStart() string {
	sc := m.Snap.Scenario
	lease := "The leases table is empty"
	if l := sc.Initial; l != nil {
		lease = fmt.Sprintf("%s holds the lease (fence %d, lease_version %d, expires %d)", l.Owner, l.Fence, l.LeaseVersion, l.ExpiresAt)
	}
	return fmt.Sprintf("You choose every move. %s; the resource's highest fence accepted is %d. Aim for a goal in the panel above.", lease, sc.Resource.Fence)
}

func (m Screen) narration(w int, l layout) []string {
	s := m.Snap
	note := strings.TrimSpace(s.Scenario.Description)
	head := "What happens"
	if m.Play.On {
		// The scripted story is one path; in play mode the learner
		// makes their own.
		note, head = m.playStart(), "Your turn"
	}
	if last := s.Last(); last != nil {
		note, head = strings.TrimSpace(last.Note), "What just happened"
	}
	if note == "" {
		return nil
	}
	inner := w
	if l.boxes {
		inner = w - 4
	}
	lines := text.Wrap([]text.Span{text.Plain(note)}, inner, "", "")
	if l.noteMax > 0 {
		lines = text.ClipSaying(lines, l.noteMax, "e exports it in full")
	}
	if l.boxes {
		return m.box([]string{head}, lines, w, 0)
	}
	return lines
}
