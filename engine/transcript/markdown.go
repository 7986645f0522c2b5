package transcript

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/leaserace/leaserace/scenario"
)

// maxCellValue bounds a value shown inside a table cell; the full value is
// in the step's own section.
const maxCellValue = 40

// WriteMarkdown writes the transcript as Markdown for people: what ran, with
// which knobs, on which server, every step in a table, every statement
// verbatim with its arguments, the verdict and the digest. It is meant to
// read well both raw and rendered on a code-hosting site.
func WriteMarkdown(w io.Writer, t Transcript) error {
	bw := bufio.NewWriter(w)
	m := mdWriter{w: bw}
	m.header(t)
	m.steps(t)
	m.statements(t)
	m.outcome(t)
	m.goals(t)
	m.presenter(t)
	m.digest(t)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cannot write the Markdown transcript: %w", err)
	}
	return nil
}

// mdWriter keeps the writer; bufio remembers the first error, so the
// sections need not check every line.
type mdWriter struct {
	w *bufio.Writer
}

func (m mdWriter) p(format string, args ...any) {
	fmt.Fprintf(m.w, format, args...)
}

func (m mdWriter) header(t Transcript) {
	kind := "transcript"
	if t.Played != nil {
		kind = "played run"
	}
	m.p("# leaserace %s: %s, %s\n\n", kind, mdText(t.Scenario), mdText(SettingWords(t.Knobs)))
	if title := builtinTitle(t); title != "" {
		m.p("*%s*\n\n", mdText(title))
	}
	source := "a scenario file"
	if t.Meta != nil && t.Meta.Source == "builtin" {
		source = "built-in"
	} else if t.Meta != nil && t.Meta.Source != "" {
		source = "file " + mdCode(t.Meta.Source)
	}
	m.p("| | |\n|---|---|\n")
	m.p("| Scenario | %s (%s) |\n", mdCell(mdCode(t.Scenario)), mdCell(source))
	m.p("| Renewal | **%s** %s |\n", mdCell(mdText(string(t.Knobs.Renewal))), mdCell(renewalWords(t.Knobs.Renewal)))
	m.p("| Fencing | **%s** %s |\n", mdCell(mdText(string(t.Knobs.Fencing))), mdCell(fencingWords(t.Knobs.Fencing)))
	if mt := t.Meta; mt != nil {
		if mt.Provider != "" {
			m.p("| Provider | %s |\n", mdCell(mdText(mt.Provider)))
		}
		if mt.ServerVersion != "" {
			m.p("| PostgreSQL | %s |\n", mdCell(mdText(mt.ServerVersion)))
		}
		if mt.RecordedAt != "" {
			by := ""
			if mt.Leaserace != "" {
				by = " by leaserace " + mt.Leaserace
			}
			m.p("| Recorded | %s%s |\n", mdCell(mt.RecordedAt), mdCell(by))
		}
	}
	m.p("| Outcome | %s |\n", mdCell(outcomeWords(t.Outcome)))
	m.p("\n")
	if t.Moves != "" {
		m.p("Moves, to play the same schedule again with `leaserace run --moves`:\n\n%s\n\n", mdCode(t.Moves))
	}
	times, lead := t.Times, "Named times"
	if t.IsPlayed() {
		// A played run's times are its moves': a named time counts only
		// where the scenario's own event was played at it.
		times, lead = t.Played.Times, "Named times played as scripted"
		if len(times) == 0 && len(t.Times) > 0 {
			m.p("The moves chose every time: no event of the scenario was played at its scripted time.\n\n")
		}
	}
	if len(times) > 0 {
		names := make([]string, 0, len(times))
		for n := range times {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			a, b := times[names[i]], times[names[j]]
			return a < b || a == b && names[i] < names[j]
		})
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s %d", mdText(n), times[n])
		}
		m.p("%s: %s.\n\n", lead, strings.Join(parts, " · "))
	}
	m.p("Before the first step the coordinator held %s and the resource stored %s.\n\n",
		leasePlain(t.Initial.Coordinator), resourcePlain(t.Initial.Resource.Fence, t.Initial.Resource.Value))
}

func (m mdWriter) steps(t Transcript) {
	m.p("## Steps\n\n")
	if len(t.Steps) == 0 {
		m.p("No step has run.\n\n")
		return
	}
	m.p("| # | t | actor | action | result | command tag | coordinator after | resource after |\n")
	m.p("|--:|--:|---|---|---|---|---|---|\n")
	prev := t.Initial.Coordinator
	for i, s := range t.Steps {
		m.p("| %d | %d | %s | %s | %s | %s | %s | %s |\n", i+1, s.T,
			mdCell(mdText(s.Actor)), mdCell(actionWords(s)), mdCell(resultWords(s)), mdCell(tagWords(s)),
			mdCell(leaseCell(prev, s.Coordinator)), mdCell(resourceCell(s.Resource)))
		prev = s.Coordinator
	}
	m.p("\n")
}

func (m mdWriter) statements(t Transcript) {
	m.p("## What each step did\n\n")
	for i, s := range t.Steps {
		head := fmt.Sprintf("%d · t=%d · %s · %s", i+1, s.T, mdText(s.Actor), actionWords(s))
		if s.Tag != "" {
			head += " → " + mdCode(s.Tag)
		}
		m.p("### %s\n\n", head)
		if s.Note != "" {
			m.p("%s\n\n", mdText(s.Note))
		}
		if s.SQL == "" {
			m.p("No SQL ran in this step.\n\n")
		} else {
			fence := codeFence(s.SQL)
			m.p("%ssql\n%s\n%s\n\n", fence, strings.TrimRight(s.SQL, "\n"), fence)
			if len(s.Args) > 0 {
				args := make([]string, len(s.Args))
				for j, a := range s.Args {
					args[j] = fmt.Sprintf("`$%d` = %s", j+1, mdCode(argJSON(a)))
				}
				m.p("Arguments: %s.\n\n", strings.Join(args, ", "))
			}
			m.p("The server answered %s: %s.\n\n", mdCode(s.Tag), RowsWords(s.Rows))
		}
		if c := s.Call; c != nil {
			result := "accepted"
			if !c.Accepted {
				result = "refused"
				if c.Reason != "" {
					result += ": " + mdText(c.Reason)
				}
			}
			m.p("Resource call: %s → %d, %s.\n\n", mdCode(c.Method+" "+c.Path), c.Status, result)
		}
		if len(s.InFlight) > 0 {
			m.p("In flight after this step:\n\n")
			for _, f := range s.InFlight {
				due := ""
				if t.IsPlayed() {
					due = t.fateWords(i, f)
				}
				m.p("- %s\n", messageWords(f, due))
			}
			m.p("\n")
		}
	}
}

func (m mdWriter) outcome(t Transcript) {
	o := t.Outcome
	m.p("## Verdict\n\n")
	m.p("**%s**: %s.\n\n", strings.ToUpper(mdText(o.Verdict)), effectsWords(o))
	m.p("At the end the coordinator held %s and the resource stored %s.\n\n",
		leasePlain(o.Coordinator), resourcePlain(o.Resource.Fence, o.Resource.Value))
	var effects []scenario.Effect
	if n := len(t.Steps); n > 0 {
		effects = t.Steps[n-1].Resource.Effects
	}
	m.p("### Effects at the resource\n\n")
	if len(effects) == 0 {
		m.p("No write reached the resource.\n\n")
		return
	}
	m.p("| seq | actor | fence | value | stored fence before | result | judgement |\n")
	m.p("|--:|---|--:|---|--:|---|---|\n")
	for _, e := range effects {
		result := "accepted"
		if !e.Accepted {
			result = "refused"
			if e.Reason != "" {
				result += ": " + mdText(e.Reason)
			}
		}
		judged := "—"
		if e.Judgement != "" {
			judged = "**" + mdText(string(e.Judgement)) + "**"
			if e.Why != "" {
				judged += ": " + mdText(e.Why)
			}
		}
		m.p("| %d | %s | %d | %s | %d | %s | %s |\n", e.Seq, mdCell(mdText(e.Actor)), e.Fence,
			mdCell(mdCode(clipValue(e.Value))), e.StoredFence, mdCell(result), mdCell(judged))
	}
	m.p("\n")
	if o.Verdict == scenario.VerdictBlocked {
		m.p("Blocked means a valid write was lost: the resource refused a fence at or above its highest fence accepted. Strict fencing does this to the current holder; it is the unsuccessful fix. Monotonic fencing accepts it.\n\n")
	}
}

func (m mdWriter) presenter(t Transcript) {
	if len(t.Presenter) == 0 {
		return
	}
	m.p("## What the presenter did\n\n")
	m.p("In order:\n\n")
	for i, e := range t.Presenter {
		m.p("%d. %s\n", i+1, presenterWords(e))
	}
	m.p("\n")
}

func (m mdWriter) digest(t Transcript) {
	m.p("## Digest\n\n")
	if t.Digest == "" {
		m.p("This transcript carries no digest.\n")
		return
	}
	m.p("%s\n\n", mdCode(t.Digest))
	m.p("It covers the scenario, knobs, steps and outcome but not where or when they were recorded, " +
		"so the same scenario and knobs give the same digest on any machine and any provider.\n")
}

// builtinTitle is the scenario's title when the transcript comes from a
// built-in scenario of that name; a file's title is not at hand.
func builtinTitle(t Transcript) string {
	if t.Meta == nil || t.Meta.Source != "builtin" {
		return ""
	}
	sc, err := scenario.Builtin(t.Scenario)
	if err != nil {
		return ""
	}
	return sc.Title
}

func renewalWords(r scenario.Renewal) string {
	return "(" + r.Describe() + "): " + r.Explain() + "."
}

func fencingWords(f scenario.Fencing) string {
	return "— " + f.Explain() + "."
}

func outcomeWords(o Outcome) string {
	return fmt.Sprintf("%s, %s", effectsWords(o), strings.ToUpper(o.Verdict))
}

func effectsWords(o Outcome) string {
	s := plural(o.Effects, "effect") + " accepted"
	if o.Rejected > 0 {
		s += fmt.Sprintf(", %d refused", o.Rejected)
	}
	if o.Blocked > 0 {
		s += fmt.Sprintf(" (%s blocked)", plural(o.Blocked, "valid write"))
	}
	return s
}

func resultWords(s Step) string {
	if s.Result == "" {
		return "—"
	}
	return mdText(s.Result)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// RowsWords says a count of rows as the narration does: "zero rows",
// "one row", "3 rows".
func RowsWords(rows int64) string {
	switch rows {
	case 0:
		return "zero rows"
	case 1:
		return "one row"
	}
	return fmt.Sprintf("%d rows", rows)
}

func actionWords(s Step) string {
	a := mdText(string(s.Action))
	switch {
	case s.Heartbeat != "":
		a += " " + mdText(s.Heartbeat)
	case s.Action == scenario.ActionWrite && s.Fence != nil:
		a += fmt.Sprintf(" %d", *s.Fence)
	}
	return a
}

func tagWords(s Step) string {
	tag := "—"
	if s.Tag != "" {
		tag = mdCode(s.Tag)
	}
	if c := s.Call; c != nil {
		if c.Accepted {
			tag += fmt.Sprintf(" · %d accepted", c.Status)
		} else {
			tag += fmt.Sprintf(" · %d refused", c.Status)
		}
	}
	return tag
}

// leaseCell shows the row after a step, its changed fields in bold and a
// fence that went down called out.
func leaseCell(prev, cur *scenario.Lease) string {
	if cur == nil {
		return "no lease row"
	}
	bold := func(changed bool, s string) string {
		if changed && prev != nil {
			return "**" + s + "**"
		}
		return s
	}
	p := scenario.Lease{}
	if prev != nil {
		p = *prev
	}
	s := strings.Join([]string{
		bold(p.Owner != cur.Owner, mdText(cur.Owner)),
		bold(p.Fence != cur.Fence, fmt.Sprintf("fence %d", cur.Fence)),
		bold(p.LeaseVersion != cur.LeaseVersion, fmt.Sprintf("lease_version %d", cur.LeaseVersion)),
		bold(p.ExpiresAt != cur.ExpiresAt, fmt.Sprintf("expires %d", cur.ExpiresAt)),
	}, " · ")
	if prev != nil && cur.Fence < prev.Fence {
		s += fmt.Sprintf(" (fence regressed %d → %d)", prev.Fence, cur.Fence)
	}
	return s
}

func leasePlain(l *scenario.Lease) string {
	if l == nil {
		return "no lease row"
	}
	return fmt.Sprintf("%s · fence %d · lease_version %d · expires %d", mdText(l.Owner), l.Fence, l.LeaseVersion, l.ExpiresAt)
}

func resourcePlain(epoch int64, value json.RawMessage) string {
	return fmt.Sprintf("fence %d, value %s", epoch, mdCode(clipValue(value)))
}

func resourceCell(r ResourceSnap) string {
	accepted, refused := 0, 0
	for _, e := range r.Effects {
		if e.Accepted {
			accepted++
		} else {
			refused++
		}
	}
	s := fmt.Sprintf("stored fence %d · %s · %s", r.Fence, mdCode(clipValue(r.Value)), plural(accepted, "effect"))
	if refused > 0 {
		s += fmt.Sprintf(", %d refused", refused)
	}
	return s
}

// messageWords says a message in flight; due, when set, says what became
// of it in place of its scripted due time.
func messageWords(f Message, due string) string {
	switch {
	case due != "":
	case f.Due < 0:
		due = "held by the network"
	default:
		due = fmt.Sprintf("due %d", f.Due)
	}
	var s string
	switch f.Kind {
	case KindReply:
		// A reply claims nothing: it tells its sender what its renewal did.
		s = fmt.Sprintf("reply to %s's %s, sent %d, %s: %s", mdText(f.From), mdText(f.ID), f.Sent, due, RowsWords(f.Rows))
		if f.Rows == 1 && f.Snapshot.Owner == f.From {
			s += fmt.Sprintf(", so %s will believe %s", mdText(f.From), leasePlain(&f.Snapshot))
		} else {
			s += fmt.Sprintf(", so %s will know it lost the lease", mdText(f.From))
		}
	case KindWrite:
		s = fmt.Sprintf("write %s from %s, sent %d, %s, with fence %d and value %s", mdText(f.ID), mdText(f.From), f.Sent, due, f.Fence, mdCode(clipValue(f.Value)))
	default:
		s = fmt.Sprintf("%s from %s, sent %d, %s, carrying %s", mdText(f.ID), mdText(f.From), f.Sent, due, leasePlain(&f.Snapshot))
	}
	if f.Stale {
		s += " — **stale**"
		if f.StaleReason != "" {
			s += ": " + mdText(f.StaleReason)
		}
	}
	return s
}

// goals writes a played run's goals: each reached or not, in how many
// moves against par, with the moves that reached it; then those reached
// in the same session under other knobs.
func (m mdWriter) goals(t Transcript) {
	if t.Played == nil || len(t.Played.Goals) == 0 && len(t.Played.Elsewhere) == 0 {
		return
	}
	m.p("## Goals\n\n")
	if len(t.Played.Goals) > 0 {
		m.p("Under %s, the run in this file:\n\n", mdText(SettingWords(t.Knobs)))
		for _, g := range t.Played.Goals {
			m.p("- %s\n", goalWords(g))
		}
		m.p("\n")
	}
	if len(t.Played.Elsewhere) > 0 {
		m.p("Reached in the same session under another setting, by a run this file does not hold:\n\n")
		for _, g := range t.Played.Elsewhere {
			m.p("- %s\n", goalWords(g))
		}
		m.p("\n")
	}
	m.p("Each move list plays again with `leaserace run --scenario %s --renewal R --fencing F --moves 'LIST'` under the setting named.\n\n", mdText(t.Scenario))
}

func goalWords(g GoalRecord) string {
	s := fmt.Sprintf("**%s** (%s), %s: ", mdText(g.ID), mdText(g.Text), mdText(SettingWords(g.Knobs)))
	par := ""
	if p := g.Par; p != nil {
		if p.Moves > 0 {
			par = fmt.Sprintf(", par %d", p.Moves)
		} else {
			par = fmt.Sprintf("; no order of the moves reaches it (%s of %s runs)", mdText(p.Runs), mdText(p.Of))
			if p.Cut != "" {
				par += "; what cuts every path: " + mdText(p.Cut)
			}
		}
	}
	if !g.Reached {
		s += "not reached" + par
		if p := g.Par; p != nil && p.Moves > 0 && p.Path != "" {
			s += ": " + mdCode(p.Path)
		}
		return s
	}
	return s + fmt.Sprintf("**reached** in %s%s: %s", plural(g.Moves, "move"), par, mdCode(g.Path))
}

// PlayedSummary says in one line what a played run reached: its goals
// against par, and those reached by other runs of the same session; ""
// for a transcript that holds no goals.
func (tr Transcript) PlayedSummary() string {
	p := tr.Played
	if p == nil || len(p.Goals) == 0 && len(p.Elsewhere) == 0 {
		return ""
	}
	var parts []string
	for _, g := range p.Goals {
		if g.Reached {
			s := fmt.Sprintf("%s in %d moves", g.ID, g.Moves)
			if g.Par != nil && g.Par.Moves > 0 {
				s += fmt.Sprintf(" (par %d)", g.Par.Moves)
			}
			parts = append(parts, s)
		}
	}
	s := fmt.Sprintf("Played run (%s): ", tr.Knobs)
	if len(parts) == 0 {
		s += "no goal reached"
	} else {
		s += "reached " + strings.Join(parts, ", ")
	}
	for _, g := range p.Elsewhere {
		s += fmt.Sprintf("; %s was reached under %s by another run", g.ID, g.Knobs)
	}
	return s
}

// SettingWords names a knob setting as every title does: "renewal
// blind, fencing off".
func SettingWords(k scenario.Knobs) string {
	return fmt.Sprintf("renewal %s, fencing %s", k.Renewal, k.Fencing)
}

// fate is what became of message m, in flight after step i: the later
// step that delivered, landed, answered or dropped it (its index), or -1
// when it is still in flight at the end.
func (t Transcript) fate(i int, m Message) int {
	want := map[string]scenario.Action{KindHeartbeat: scenario.ActionDeliver, KindWrite: scenario.ActionWriteDeliver, KindReply: scenario.ActionReply}[m.Kind]
	for j := i + 1; j < len(t.Steps); j++ {
		s := t.Steps[j]
		if s.Heartbeat == m.ID && (s.Action == want || s.Action == scenario.ActionDrop) {
			return j
		}
	}
	return -1
}

// fateWords says the fate in words: "delivered at 1060 (step 4)".
func (t Transcript) fateWords(i int, m Message) string {
	j := t.fate(i, m)
	if j < 0 {
		return "still in flight when the run ends"
	}
	s := t.Steps[j]
	verb := "delivered"
	switch {
	case s.Action == scenario.ActionDrop:
		verb = "dropped"
	case m.Kind == KindReply:
		verb = "answered"
	}
	return fmt.Sprintf("%s at %d (step %d)", verb, s.T, j+1)
}

func presenterWords(e PresenterEntry) string {
	at := fmt.Sprintf("at t=%d (%s)", e.T, e.Knobs)
	var s string
	switch e.Kind {
	case PresenterStep, PresenterPlay:
		// The move by name, as run --moves reads it.
		verb := map[string]string{PresenterStep: "step", PresenterPlay: "played"}[e.Kind]
		s = "**" + verb + "** " + at
		if st := e.Step; st != nil {
			s = fmt.Sprintf("**%s** %s %s", verb, mdCode(st.Move().String()), at)
			if st.Tag != "" {
				s += " → " + mdCode(st.Tag)
			}
			if st.Result != "" && st.Result != ResultDone {
				s += " (" + mdText(st.Result) + ")"
			}
		}
		if e.Fork != "" {
			s = fmt.Sprintf("**fork** at step %d: %s instead of %s", e.Pos, s, mdCode(e.Fork))
		}
	case PresenterBack:
		s = fmt.Sprintf("**back** to step %d %s", e.Pos, at)
	case PresenterSeek:
		s = fmt.Sprintf("**moved** to step %d %s", e.Pos, at)
	case PresenterToggle:
		s = fmt.Sprintf("**toggled** the knobs to %s %s", mdText(e.Knobs.String()), fmt.Sprintf("at t=%d", e.T))
	case PresenterScenario:
		s = "**opened** scenario " + mdCode(e.Scenario) + " " + at
	default:
		s = "**" + mdText(e.Kind) + "** " + at
	}
	if len(e.Change) > 0 {
		parts := make([]string, len(e.Change))
		for i, c := range e.Change {
			parts[i] = mdText(c)
		}
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// argJSON shows an argument as the transcript's JSON does.
func argJSON(a any) string {
	b, err := scenario.MarshalPlain(a)
	if err != nil {
		return fmt.Sprint(a)
	}
	return string(b)
}

func clipValue(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	if s == "" {
		s = "null"
	}
	if r := []rune(s); len(r) > maxCellValue {
		s = string(r[:maxCellValue-1]) + "…"
	}
	return s
}

// mdCell makes text safe inside a table cell: one line, pipes escaped
// (GitHub-flavoured tables split on | even inside code spans).
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\r\n", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// mdText escapes prose so that what a scenario author wrote cannot turn
// into markup: no emphasis, links, code or HTML, and stays on one line.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '[', ']':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\n', '\r':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdCode wraps s in a code span whose backtick fence is longer than any run
// of backticks inside it.
func mdCode(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// codeFence is a fence for a code block that no line of s can close.
func codeFence(s string) string {
	return strings.Repeat("`", max(3, longestRun(s, '`')+1))
}

func longestRun(s string, c rune) int {
	best, cur := 0, 0
	for _, r := range s {
		if r == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
