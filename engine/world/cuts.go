package world

import (
	"fmt"
	"slices"
	"strings"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// Cuts gathers, over every move a search plays, what the moves that could
// bring a goal about answered: each write with the fence it carried against
// the resource's highest fence accepted before it, each heartbeat delivery
// with the command tag it got, and who believed they held the lease. For a
// goal no order of the moves reaches, Cut then names the move that cuts
// every path to it, in the servers' own words. The zero value is empty and
// ready to use; a search keeps one per setting.
type Cuts struct {
	// writes are the writes that reached the resource, by actor, fence
	// carried and highest fence accepted before them.
	writes map[writeKey]*writeSeen
	// noCall lists the actors whose write made no call at least once.
	noCall []string
	// deliveries are the heartbeat deliveries that ran a statement, by
	// message; stale marks those whose lease was no longer current when
	// they arrived.
	deliveries map[deliveryKey]*deliverySeen
	// believers lists every actor that believed it held the lease after
	// some move; most is the most that did so after one move.
	believers []string
	most      int
}

type writeKey struct {
	actor       string
	fence, high int64
}

type writeSeen struct {
	statuses []int
	accepted bool
	reason   string
	// order keeps the key in the order first seen, for a stable sentence.
	order int
}

type deliveryKey struct {
	id    string
	stale bool
}

type deliverySeen struct {
	from    string
	tags    []string
	reasons []string
	order   int
}

// Observe records one move: st is what it did, played from state s.
func (c *Cuts) Observe(s *State, st transcript.Step) {
	if c.writes == nil {
		c.writes, c.deliveries = map[writeKey]*writeSeen{}, map[deliveryKey]*deliverySeen{}
	}
	held := 0
	for _, b := range st.Beliefs {
		if b.Holds {
			held++
			if !slices.Contains(c.believers, b.Actor) {
				c.believers = append(c.believers, b.Actor)
			}
		}
	}
	c.most = max(c.most, held)
	switch st.Action {
	case scenario.ActionDeliver:
		if st.SQL == "" {
			return
		}
		i := slices.IndexFunc(s.flight, func(m transcript.Message) bool { return m.ID == st.Heartbeat })
		if i < 0 {
			return
		}
		m := s.flight[i]
		why := staleReason(m, s.coord, st.T)
		k := deliveryKey{m.ID, why != ""}
		d := c.deliveries[k]
		if d == nil {
			d = &deliverySeen{from: m.From, order: len(c.deliveries)}
			c.deliveries[k] = d
		}
		if !slices.Contains(d.tags, st.Tag) {
			d.tags = append(d.tags, st.Tag)
		}
		if why != "" && !slices.Contains(d.reasons, why) {
			d.reasons = append(d.reasons, why)
		}
	case scenario.ActionEffect, scenario.ActionWrite, scenario.ActionWriteDeliver:
		if st.Result == transcript.ResultNoCall {
			if !slices.Contains(c.noCall, st.Actor) {
				c.noCall = append(c.noCall, st.Actor)
			}
			return
		}
		if st.Call == nil || len(st.Resource.Effects) <= len(s.res.Effects) {
			return
		}
		e := st.Resource.Effects[len(st.Resource.Effects)-1]
		high := highestAccepted(s.sc.Resource.Fence, s.res.Effects)
		k := writeKey{e.Actor, e.Fence, high}
		w := c.writes[k]
		if w == nil {
			w = &writeSeen{order: len(c.writes)}
			c.writes[k] = w
		}
		if !slices.Contains(w.statuses, st.Call.Status) {
			w.statuses = append(w.statuses, st.Call.Status)
		}
		w.accepted = w.accepted || e.Accepted
		if w.reason == "" {
			w.reason = e.Reason
		}
	}
}

// highestAccepted is the resource's highest fence accepted: its initial
// one and every accepted write's.
func highestAccepted(initial int64, effects []scenario.Effect) int64 {
	high := initial
	for _, e := range effects {
		if e.Accepted {
			high = max(high, e.Fence)
		}
	}
	return high
}

// Cut says which move cuts every path to a goal decided by p, from what
// the moves observed answered: "every delivery of hb1 once stale (B now
// holds fence 2) got UPDATE 0, so A never wrote". It is meant for a goal
// no order reaches; "" when the moves observed say nothing specific.
func (c *Cuts) Cut(p scenario.Predicate) string {
	switch p {
	case scenario.GoalConflict:
		if s := c.staleWritesRefused(); s != "" {
			return s
		}
		if len(c.believers) == 1 && len(c.sortedWrites(true)) == 0 {
			return "only " + c.believers[0] + " ever believed it held the lease, so no newer fence was taken and no write could carry a stale one"
		}
		if s := c.staleDeliveriesRefused(); s != "" {
			return s + c.soNoWrite()
		}
		if len(c.writes) == 0 && len(c.noCall) > 0 {
			return "no write ever reached the resource: every write " + joinAnd(c.noCall) + " tried made no call"
		}
		return "no write ever carried a fence below the resource's highest fence accepted"
	case scenario.GoalBlocked:
		return c.validWritesAccepted()
	case scenario.GoalResurrected:
		if s := c.staleDeliveriesRefused(); s != "" {
			return s + ", so the row's fence never went down"
		}
	case scenario.GoalStaleRenewal:
		if s := c.staleDeliveriesRefused(); s != "" {
			return s
		}
		if len(c.staleDeliveries()) == 0 {
			return "no heartbeat arrived stale: every delivery found the lease it carried still current"
		}
	case scenario.GoalZeroRows:
		var parts []string
		tags := map[string][]string{}
		var ids []string
		for _, d := range c.sortedDeliveries() {
			if !slices.Contains(ids, d.key.id) {
				ids = append(ids, d.key.id)
			}
			for _, t := range d.tags {
				if !slices.Contains(tags[d.key.id], t) {
					tags[d.key.id] = append(tags[d.key.id], t)
				}
			}
		}
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("every delivery of %s got %s, current or not", id, strings.Join(tags[id], " or ")))
		}
		if len(parts) == 0 {
			return "no heartbeat was ever delivered"
		}
		return strings.Join(parts, "; ")
	case scenario.GoalTwoHolders:
		switch {
		case len(c.believers) == 0:
			return "no actor ever believed it held the lease: no move here takes it"
		case len(c.believers) == 1:
			return "only " + c.believers[0] + " ever believed it held the lease"
		}
		if s := c.staleDeliveriesRefused(); s != "" {
			return s + ", so " + joinAnd(c.staleSenders()) + " never believed it held the lease again while another did"
		}
		return fmt.Sprintf("%s each believed they held the lease, but never after the same move", joinAnd(c.believers))
	}
	return ""
}

type keyedDelivery struct {
	key deliveryKey
	*deliverySeen
}

func (c *Cuts) sortedDeliveries() []keyedDelivery {
	var out []keyedDelivery
	for k, d := range c.deliveries {
		out = append(out, keyedDelivery{k, d})
	}
	slices.SortFunc(out, func(a, b keyedDelivery) int { return a.order - b.order })
	return out
}

func (c *Cuts) staleDeliveries() []keyedDelivery {
	var out []keyedDelivery
	for _, d := range c.sortedDeliveries() {
		if d.key.stale {
			out = append(out, d)
		}
	}
	return out
}

// staleDeliveriesRefused is "every delivery of hb1 once stale (B now holds
// fence 2) got UPDATE 0" when every stale delivery changed no row; "" when
// there were none or one changed a row.
func (c *Cuts) staleDeliveriesRefused() string {
	stale := c.staleDeliveries()
	if len(stale) == 0 {
		return ""
	}
	var parts []string
	for _, d := range stale {
		if slices.ContainsFunc(d.tags, func(t string) bool { return !strings.HasSuffix(t, " 0") }) {
			return ""
		}
		// The reason another actor took over says most: it goes first.
		reasons := slices.Clone(d.reasons)
		slices.SortStableFunc(reasons, func(a, b string) int {
			return boolInt(!strings.Contains(a, " holds ")) - boolInt(!strings.Contains(b, " holds "))
		})
		parts = append(parts, fmt.Sprintf("every delivery of %s once its lease was no longer current (%s) got %s", d.key.id, strings.Join(reasons, ", or "), strings.Join(d.tags, " or ")))
	}
	return strings.Join(parts, "; ")
}

// soNoWrite ends the stale deliveries' sentence with what their senders
// did about the writes they then did not make.
func (c *Cuts) soNoWrite() string {
	var senders []string
	for _, a := range c.staleSenders() {
		if slices.Contains(c.noCall, a) {
			senders = append(senders, a)
		}
	}
	if len(senders) == 0 {
		return ""
	}
	return fmt.Sprintf(", so %s never wrote with a stale fence (its write made no call)", joinAnd(senders))
}

// staleSenders lists who sent the heartbeats that arrived stale.
func (c *Cuts) staleSenders() []string {
	var out []string
	for _, d := range c.staleDeliveries() {
		if !slices.Contains(out, d.from) {
			out = append(out, d.from)
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type keyedWrite struct {
	key writeKey
	*writeSeen
}

func (c *Cuts) sortedWrites(stale bool) []keyedWrite {
	var out []keyedWrite
	for k, w := range c.writes {
		if (k.fence < k.high) == stale {
			out = append(out, keyedWrite{k, w})
		}
	}
	slices.SortFunc(out, func(a, b keyedWrite) int { return a.order - b.order })
	return out
}

// staleWritesRefused is "every write with a fence below the resource's
// highest fence accepted was refused: A's fence 1 against 2 got 409" when
// such writes reached the resource and none was accepted.
func (c *Cuts) staleWritesRefused() string {
	ws := c.sortedWrites(true)
	if len(ws) == 0 {
		return ""
	}
	var parts []string
	for _, w := range ws {
		if w.accepted {
			return ""
		}
		parts = append(parts, fmt.Sprintf("%s's fence %d when the highest was %d got %s", w.key.actor, w.key.fence, w.key.high, statuses(w.statuses)))
	}
	s := "every write carrying a fence below the resource's highest fence accepted was refused: " + examples(parts)
	if r := ws[0].reason; r != "" {
		s += " (“" + r + "”)"
	}
	return s
}

// validWritesAccepted is "every write carrying at least the resource's
// highest fence accepted was accepted: B's fence 2 against 2 got 200".
func (c *Cuts) validWritesAccepted() string {
	ws := c.sortedWrites(false)
	if len(ws) == 0 {
		return "no write carrying the resource's highest fence accepted or a newer one ever reached the resource"
	}
	// A fence equal to the highest is where fencing rules differ: it
	// goes first.
	slices.SortStableFunc(ws, func(a, b keyedWrite) int {
		return boolInt(a.key.fence != a.key.high) - boolInt(b.key.fence != b.key.high)
	})
	var parts []string
	for _, w := range ws {
		if !w.accepted {
			return ""
		}
		parts = append(parts, fmt.Sprintf("%s's fence %d when the highest was %d got %s", w.key.actor, w.key.fence, w.key.high, statuses(w.statuses)))
	}
	return "every write carrying at least the resource's highest fence accepted was accepted: " + examples(parts)
}

// examples is the first part, with how many more there are: the search
// saw them all, the screen has room for one.
func examples(parts []string) string {
	switch len(parts) {
	case 1:
		return parts[0]
	case 2:
		return parts[0] + ", and one more like it"
	}
	return fmt.Sprintf("%s, and %d more like it", parts[0], len(parts)-1)
}

func statuses(ss []int) string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprint(s))
	}
	return strings.Join(out, " or ")
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
