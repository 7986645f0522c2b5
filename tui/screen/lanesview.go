package screen

import (
	"github.com/leaserace/leaserace/tui/lanes"
	"github.com/leaserace/leaserace/tui/screen/timeline"
)

// diagram is the lane model of the snapshot. In play mode the moves not
// played yet are the script's, not the learner's: they are left out.
func (m Screen) diagram() lanes.Diagram {
	s := m.Snap
	sc := s.Scenario
	log := s.Log
	if m.Play.On {
		log = log[:min(len(log), s.View.Pos)]
	}
	return lanes.Build(lanes.Input{
		Actors: sc.Actors(), Log: log, Steps: s.Steps,
		Initial: sc.Initial, InitialEpoch: sc.Resource.Fence,
		InFlight: s.View.InFlight, From: sc.Window.From, End: s.End, Now: s.View.Now,
	})
}

// timeline is the lanes as the screen shows them (tui/screen/timeline).
func (m Screen) timeline(w int, full, roomy bool) []string {
	return m.lanesBlock(w, full, roomy).Lines
}

func (m Screen) lanesBlock(w int, full, roomy bool) timeline.Block {
	return timeline.Draw(m.diagram(), m.Styles, w, full, roomy)
}
