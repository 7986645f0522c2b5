package htmlpage

import (
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/lanes"
)

// diagramOf is the terminal timeline's lane model (tui/lanes) of the
// whole run, every move played: the page draws the same picture as the
// terminal, from the same model.
func diagramOf(tr transcript.Transcript, actors []string) lanes.Diagram {
	log := make([]scenario.Move, len(tr.Steps))
	for i, s := range tr.Steps {
		log[i] = s.Move()
	}
	in := lanes.Input{
		Actors:       actors,
		Log:          log,
		Steps:        tr.Steps,
		Initial:      tr.Initial.Coordinator,
		InitialEpoch: tr.Initial.Resource.Fence,
	}
	if n := len(tr.Steps); n > 0 {
		in.InFlight = tr.Steps[n-1].InFlight
		in.From, in.End, in.Now = tr.Steps[0].T, tr.Steps[n-1].T, tr.Steps[n-1].T
	}
	return lanes.Build(in)
}

// kindOf names a mark for the page's classes and data attributes.
func kindOf(m lanes.Mark) string {
	switch m {
	case lanes.Done:
		return "done"
	case lanes.Refused:
		return "refused"
	case lanes.NoCall:
		return "nocall"
	case lanes.Blocked:
		return "blocked"
	case lanes.Stale:
		return "stale"
	case lanes.Regressed:
		return "regressed"
	}
	return "pending"
}

// dangerWords are written above a danger mark, in two short lines, so it
// stands out without colour too.
func dangerWords(m lanes.Mark) []string {
	switch m {
	case lanes.Stale:
		return []string{"STALE", "ACCEPTED"}
	case lanes.Regressed:
		return []string{"ROW", "REGRESSED"}
	case lanes.Blocked:
		return []string{"VALID WRITE", "BLOCKED"}
	}
	return nil
}

// moveLabel is the move in a few words: its verb and message or fence
// ("deliver hb1", "write 11"), without actor and time, which its lane
// and column give.
func moveLabel(mv lanes.Move, s transcript.Step) string {
	label := mv.Action.Verb()
	switch {
	case mv.Msg != "":
		label += " " + mv.Msg
	case s.Fence != nil && mv.Action == scenario.ActionWrite:
		label += " " + itoa(*s.Fence)
	}
	return label
}

// staleInFlight reports whether the message was carrying a fence that was
// no longer current at some step while it travelled, as the transcript's
// network says.
func staleInFlight(tr transcript.Transcript, m lanes.Message) bool {
	end := len(tr.Steps)
	if m.End >= 0 {
		end = m.End
	}
	for i := max(m.Send, 0); i < end && i < len(tr.Steps); i++ {
		for _, f := range tr.Steps[i].InFlight {
			if f.ID == m.ID && f.Kind == m.Kind && f.Stale {
				return true
			}
		}
	}
	return false
}
