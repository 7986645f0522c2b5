// Package htmlpage writes a run as one self-contained HTML page: the
// lanes of the terminal's timeline drawn as SVG, a cursor to step
// through it with the coordinator row, the messages in flight and the
// resource beside it, every move's SQL, command tag and HTTP call, and the
// run's transcript embedded with its digest, so that leaserace verify and
// replay read the page as they read the JSON. Nothing is loaded from the
// network: the CSS, the script and the data are all inline.
package htmlpage

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/lanes"
)

var (
	//go:embed page.tmpl
	pageTmpl string
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

// page is what the template fills in.
type page struct {
	Scenario, Title        string
	Renewal, Fencing       string
	RenewalWords           string
	FencingWords           string
	Verdict, VerdictClass  string
	Outcome                string
	Moves, Command         string
	Played                 bool
	Goals                  []goalRow
	Elsewhere              []goalRow
	Steps                  []stepRow
	Legend                 []legendRow
	SVG                    template.HTML
	Data                   template.HTML
	Digest                 string
	Recorded               string
	FirstDanger, StepCount int
	CSS                    template.CSS
	JS                     template.JS
}

type stepRow struct {
	Index  int // 0-based, as the script and the diagram count
	N      int
	T      int64
	Actor  string
	Move   string
	Glyph  string
	Kind   string
	Words  string
	Danger bool
	Tag    string
	Call   string
	Note   string
}

type legendRow struct {
	Glyph, Kind, Words string
	Danger             bool
}

type goalRow struct {
	ID, Text string
	Reached  bool
	Moves    int
	// Par is the search's word on the goal under the run's knobs ("" when
	// none was made); Path the moves that reached it, for run --moves.
	Par, Path string
	// Cut, for a goal no order reaches, names the move that cuts every
	// path to it, in the run's own words.
	Cut string
	// Knobs is set for a goal reached under another setting.
	Knobs string
}

// Write writes the page for a transcript in this release's format, as
// export.Render hands it over (an older file upgraded): the page's script
// reads v3's keys.
func Write(w io.Writer, tr transcript.Transcript) error {
	t, err := template.New("page").Parse(pageTmpl)
	if err != nil {
		return fmt.Errorf("the page template is broken: %w", err)
	}
	pg, err := pageOf(tr)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, pg); err != nil {
		return fmt.Errorf("cannot write the page: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("cannot write the page: %w", err)
	}
	return nil
}

// Render is the page as bytes.
func Render(tr transcript.Transcript) ([]byte, error) {
	var b bytes.Buffer
	err := Write(&b, tr)
	return b.Bytes(), err
}

func pageOf(tr transcript.Transcript) (page, error) {
	var data bytes.Buffer
	if err := transcript.WriteHTMLEmbed(&data, tr); err != nil {
		return page{}, err
	}
	// The scenario orders the lanes and gives the goals; a transcript of a
	// scenario file no longer at hand still draws, from its own moves.
	sc, scErr := engine.ScenarioOf(tr)
	var actors []string
	if scErr == nil {
		actors = sc.Actors()
	} else if c := tr.Initial.Coordinator; c != nil {
		actors = []string{c.Owner}
	}
	d := diagramOf(tr, actors)
	pg := page{
		Scenario:     tr.Scenario,
		Renewal:      string(tr.Knobs.Renewal),
		Fencing:      string(tr.Knobs.Fencing),
		RenewalWords: renewalWords(tr.Knobs.Renewal),
		FencingWords: fencingWords(tr.Knobs.Fencing),
		Verdict:      strings.ToUpper(tr.Outcome.Verdict),
		VerdictClass: tr.Outcome.Verdict,
		Outcome:      outcomeWords(tr.Outcome),
		Moves:        tr.Moves,
		SVG:          template.HTML(svgOf(d, tr)),
		Data:         template.HTML(data.String()),
		Digest:       tr.Digest,
		FirstDanger:  -1,
		StepCount:    len(tr.Steps),
		CSS:          template.CSS(pageCSS),
		JS:           template.JS(pageJS),
	}
	if tr.Moves != "" {
		pg.Command = fmt.Sprintf("leaserace run --scenario %s --renewal %s --fencing %s --moves '%s' --format html --out run.html", tr.Scenario, tr.Knobs.Renewal, tr.Knobs.Fencing, tr.Moves)
	}
	if m := tr.Meta; m != nil {
		pg.Recorded = strings.TrimSpace(strings.Join([]string{m.RecordedAt, m.Provider, m.ServerVersion}, " "))
	}
	// The jump goes to the first accepted stale write or regressed row: a
	// blocked write stands out too, but it is not the race's danger.
	for _, mv := range d.Danger() {
		if mv.Mark == lanes.Stale || mv.Mark == lanes.Regressed {
			pg.FirstDanger = mv.Index
			break
		}
	}
	for _, mv := range d.Moves {
		s := tr.Steps[mv.Index]
		row := stepRow{Index: mv.Index, N: mv.Index + 1, T: s.T, Actor: s.Actor, Move: moveLabel(mv, s), Glyph: mv.Mark.Glyph(), Kind: kindOf(mv.Mark), Words: mv.Mark.Words(), Danger: mv.Mark.Danger(), Tag: s.Tag, Note: s.Note}
		if mv.Why != "" {
			row.Words += ": " + mv.Why
		}
		if c := s.Call; c != nil {
			row.Call = fmt.Sprintf("%s %s → %d", c.Method, c.Path, c.Status)
		}
		pg.Steps = append(pg.Steps, row)
	}
	// The legend lists every mark a move can have, the terminal's words.
	for _, m := range lanes.Marks() {
		if m == lanes.Pending {
			continue
		}
		pg.Legend = append(pg.Legend, legendRow{Glyph: m.Glyph(), Kind: kindOf(m), Words: m.Words(), Danger: m.Danger()})
	}
	if scErr == nil {
		pg.Title = sc.Title
	}
	switch {
	case tr.Played != nil && len(tr.Played.Goals) > 0:
		// A played run carries its goals against par (issue 21).
		pg.Played = true
		for _, g := range tr.Played.Goals {
			pg.Goals = append(pg.Goals, goalRowOf(g, ""))
		}
		for _, g := range tr.Played.Elsewhere {
			pg.Elsewhere = append(pg.Elsewhere, goalRowOf(g, g.Knobs.String()))
		}
	case scErr == nil:
		pg.Played = tr.Played != nil
		for _, g := range world.GoalsOf(sc.Goals(), tr.Initial.Coordinator, tr.Steps) {
			pg.Goals = append(pg.Goals, goalRow{ID: g.Goal.ID, Text: g.Goal.Text, Reached: g.Reached, Moves: g.Moves})
		}
	}
	return pg, nil
}

// goalRowOf is one goal of a played run, with par in words.
func goalRowOf(g transcript.GoalRecord, knobs string) goalRow {
	row := goalRow{ID: g.ID, Text: g.Text, Reached: g.Reached, Moves: g.Moves, Path: g.Path, Knobs: knobs}
	if p := g.Par; p != nil {
		if p.Moves > 0 {
			row.Par = fmt.Sprintf("par %d (%s of %s complete runs reach it)", p.Moves, p.Runs, p.Of)
		} else {
			row.Par = fmt.Sprintf("impossible under these knobs: no order of the moves reaches it (0 of %s runs)", p.Of)
			row.Cut = p.Cut
		}
	}
	return row
}

func renewalWords(r scenario.Renewal) string {
	return r.Describe() + ": " + r.Explain()
}

func fencingWords(f scenario.Fencing) string {
	return f.Describe() + ": " + f.Explain()
}

func outcomeWords(o transcript.Outcome) string {
	s := fmt.Sprintf("%d effects accepted", o.Effects)
	if o.Effects == 1 {
		s = "1 effect accepted"
	}
	if o.Rejected > 0 {
		s += fmt.Sprintf(", %d refused", o.Rejected)
	}
	if o.Blocked > 0 {
		s += fmt.Sprintf(" (%d valid blocked)", o.Blocked)
	}
	return s
}
