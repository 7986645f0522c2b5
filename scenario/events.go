package scenario

import (
	"fmt"
	"strings"
)

// eventFields says which fields an action takes besides t, actor, note and
// ask. Heartbeats name themselves with heartbeat:, delayed writes with
// message:; both become Event.Heartbeat.
type eventFields struct {
	heartbeat bool // heartbeat: NAME, required
	message   bool // message: NAME, required
	snapshot  bool // optional
	epoch     bool // required
	value     bool // optional; null when left out
}

func fieldsOf(a Action) eventFields {
	switch a {
	case ActionSend:
		return eventFields{heartbeat: true, snapshot: true}
	case ActionDeliver, ActionReply:
		return eventFields{heartbeat: true}
	case ActionEffect:
		return eventFields{value: true}
	case ActionWrite:
		return eventFields{epoch: true, value: true}
	case ActionWriteSend:
		return eventFields{message: true, value: true}
	case ActionWriteDeliver:
		return eventFields{message: true}
	}
	return eventFields{}
}

// actionsTaking lists, for an error message, the file actions that take a field.
func actionsTaking(takes func(eventFields) bool) string {
	var names []string
	for _, a := range Actions() {
		if takes(fieldsOf(a)) {
			names = append(names, string(a))
		}
	}
	return joinWords(names, "and")
}

func (f *file) event(s *Scenario, i int, fe fileEvent) (Event, error) {
	p := fmt.Sprintf("$.events[%d]", i)
	ev := Event{Index: i, Actor: fe.Actor, Note: fe.Note}
	if l, c := f.at(p); l > 0 {
		ev.Pos = fmt.Sprintf("%d:%d", l, c)
	}
	t, expr, err := resolveTime(fe.T, s.Times)
	if err != nil {
		return ev, f.errAt(p+".t", "event %d: %v", i, err)
	}
	ev.T, ev.TExpr = t, expr
	act := Action(fe.Action)
	known := false
	for _, a := range Actions() {
		known = known || a == act
	}
	if !known {
		names := make([]string, 0, len(Actions()))
		for _, a := range Actions() {
			names = append(names, string(a))
		}
		return ev, f.errAt(p+".action", "event %d: action %q: want one of %s", i, fe.Action, strings.Join(names, ", "))
	}
	ev.Action = act

	// The clock's name belongs to the clock, so that every event has a
	// move the move log can read back (clock:expire@1060, B:acquire@1070).
	if act == ActionExpire {
		if fe.Actor != "" && fe.Actor != ClockActor {
			return ev, f.errAt(p+".actor", "event %d: expire is the clock's: leave actor out (or write actor: %s)", i, ClockActor)
		}
		ev.Actor = ClockActor
	} else {
		if !actorRE.MatchString(fe.Actor) {
			return ev, f.errAt(p+".actor", "event %d: actor %q: want a short name such as A or B (letters, digits, _ or -, at most 16)", i, fe.Actor)
		}
		if fe.Actor == ClockActor {
			return ev, f.errAt(p+".actor", "event %d: %s is the clock's name, and the clock only expires; give the actor another name", i, ClockActor)
		}
	}

	want := fieldsOf(act)
	switch {
	case want.heartbeat:
		if fe.Message != "" {
			return ev, f.errAt(p+".message", "event %d: %s names its heartbeat with heartbeat: NAME, not message:", i, act)
		}
		if err := f.messageName(p, "heartbeat", i, act, fe.Heartbeat); err != nil {
			return ev, err
		}
		ev.Heartbeat = fe.Heartbeat
	case want.message:
		if fe.Heartbeat != "" {
			return ev, f.errAt(p+".heartbeat", "event %d: %s names its write with message: NAME, not heartbeat:", i, act)
		}
		if err := f.messageName(p, "message", i, act, fe.Message); err != nil {
			return ev, err
		}
		ev.Heartbeat = fe.Message
	default:
		if fe.Heartbeat != "" {
			return ev, f.errAt(p+".heartbeat", "event %d: heartbeat is only for %s", i, actionsTaking(func(x eventFields) bool { return x.heartbeat }))
		}
		if fe.Message != "" {
			return ev, f.errAt(p+".message", "event %d: message is only for %s", i, actionsTaking(func(x eventFields) bool { return x.message }))
		}
	}

	if fe.Snapshot != nil {
		if !want.snapshot {
			return ev, f.errAt(p+".snapshot", "event %d: snapshot is only for %s", i, actionsTaking(func(x eventFields) bool { return x.snapshot }))
		}
		l, err := f.lease(fe.Snapshot, p+".snapshot", true)
		if err != nil {
			return ev, err
		}
		ev.Snapshot = &l
	}
	fence, key, err := f.fenceKey(p, fe.Fence, fe.Epoch)
	if err != nil {
		return ev, err
	}
	switch {
	case want.epoch:
		if fence == nil {
			return ev, f.errAt(p, "event %d: %s needs fence", i, act)
		}
		if *fence < 0 {
			return ev, f.errAt(p+"."+key, "event %d: %s %d: fences are nonnegative", i, key, *fence)
		}
		v := int64(*fence)
		ev.Fence = &v
	case fence != nil:
		why := ""
		if act == ActionEffect || act == ActionWriteSend {
			why = fmt.Sprintf(" (%s uses the actor's fence)", act)
		}
		return ev, f.errAt(p+"."+key, "event %d: %s is only for %s%s", i, key, actionsTaking(func(x eventFields) bool { return x.epoch }), why)
	}
	switch {
	case want.value:
		v, err := jsonValue(fe.Value)
		if err != nil {
			return ev, f.errAt(p+".value", "event %d: value: %v", i, err)
		}
		ev.Value = v
	case fe.Value != nil:
		return ev, f.errAt(p+".value", "event %d: value is only for %s", i, actionsTaking(func(x eventFields) bool { return x.value }))
	}
	if fe.Ask != nil {
		a, err := f.ask(p, i, act, fe.Ask)
		if err != nil {
			return ev, err
		}
		ev.Ask = a
	}
	return ev, nil
}

// messageName checks the name under field (heartbeat or message).
func (f *file) messageName(p, field string, i int, act Action, name string) error {
	if name == "" {
		return f.errAt(p, "event %d: %s needs %s: NAME (letters, digits or _)", i, act, field)
	}
	if !timeNameR.MatchString(name) {
		return f.errAt(p+"."+field, "event %d: %s name %q: want a letter or _ then letters, digits or _, at most 32 in all", i, field, name)
	}
	return nil
}

// message is what the timeline knows of one message: heartbeats and
// delayed writes share one namespace.
type message struct {
	write     bool
	sent      Event
	delivered *Event
	replied   bool
}

func (m *message) noun() string {
	if m.write {
		return "write"
	}
	return "heartbeat"
}

// checkTimeline checks what needs the whole timeline, in time order:
// messages are sent once, delivered once after they are sent and by their
// sender, and a reply follows its heartbeat's delivery; an actor that is
// paused does nothing until it resumes; leases exist before use.
func (f *file) checkTimeline(s *Scenario) error {
	exists := map[string]bool{}
	if s.Initial != nil {
		exists[s.Initial.Owner] = true
	}
	for _, ev := range s.Events {
		if ev.Action != ActionPause && ev.Action != ActionResume && ev.Actor != ClockActor {
			exists[ev.Actor] = true
		}
	}
	msgs := map[string]*message{}
	paused := map[string]Event{}
	for _, ev := range s.Events {
		p := fmt.Sprintf("$.events[%d]", ev.Index)
		if ev.Action == ActionPause || ev.Action == ActionResume {
			if !exists[ev.Actor] {
				return f.errAt(p+".actor", "event %d: %s of %s, who is not in this scenario: an actor exists when the initial row or another event names it", ev.Index, ev.Action, ev.Actor)
			}
		}
		if pe, ok := paused[ev.Actor]; ok && ev.Action != ActionResume {
			if ev.Action == ActionPause {
				return f.errAt(p, "event %d: %s is paused already, since %d (%s); resume it before pausing it again", ev.Index, ev.Actor, pe.T, pe.Pos)
			}
			return f.errAt(p, "event %d: %s is paused at %d (%s) until it resumes, so its %s at %d cannot happen; resume it first", ev.Index, ev.Actor, pe.T, pe.Pos, ev.Action, ev.T)
		}
		switch ev.Action {
		case ActionAcquire, ActionRelease, ActionReelect:
			if s.Initial == nil {
				what := map[Action]string{ActionAcquire: "takes over", ActionRelease: "gives up", ActionReelect: "extends"}[ev.Action]
				return f.errAt(p, "event %d: %s %s the lease row, so initial.coordinator must declare it", ev.Index, ev.Action, what)
			}
		case ActionSend, ActionWriteSend:
			m := &message{write: ev.Action == ActionWriteSend, sent: ev}
			if first, dup := msgs[ev.Heartbeat]; dup {
				return f.errAt(f.msgPath(p, ev.Action), "event %d: %s %s is sent twice (first at %d, %s); give each message its own name", ev.Index, m.noun(), ev.Heartbeat, first.sent.T, first.sent.Pos)
			}
			if ev.Action == ActionSend && s.Initial == nil && ev.Snapshot == nil {
				return f.errAt(p, "event %d: a heartbeat carries a lease snapshot, so initial.coordinator must declare the row", ev.Index)
			}
			msgs[ev.Heartbeat] = m
		case ActionDeliver, ActionWriteDeliver:
			want := ev.Action == ActionWriteDeliver
			m, ok := msgs[ev.Heartbeat]
			switch {
			case !ok:
				noun := (&message{write: want}).noun()
				return f.errAt(f.msgPath(p, ev.Action), "event %d: %s %s is delivered at %d but not sent before then", ev.Index, noun, ev.Heartbeat, ev.T)
			case m.write != want:
				return f.errAt(p+".action", "event %d: %s is a %s, sent with %s at %d, so it arrives with %s, not %s", ev.Index, ev.Heartbeat, m.noun(), m.sent.Action, m.sent.T, deliveryOf(m.write), ev.Action)
			case m.delivered != nil:
				return f.errAt(f.msgPath(p, ev.Action), "event %d: %s %s is delivered twice (first at %d, %s)", ev.Index, m.noun(), ev.Heartbeat, m.delivered.T, m.delivered.Pos)
			case m.sent.Actor != ev.Actor:
				return f.errAt(p+".actor", "event %d: %s %s was sent by %s, so %s cannot deliver it", ev.Index, m.noun(), ev.Heartbeat, m.sent.Actor, ev.Actor)
			}
			d := ev
			m.delivered = &d
		case ActionReply:
			m, ok := msgs[ev.Heartbeat]
			switch {
			case !ok:
				return f.errAt(p+".heartbeat", "event %d: the reply to heartbeat %s arrives at %d, but %s is not sent before then", ev.Index, ev.Heartbeat, ev.T, ev.Heartbeat)
			case m.write:
				return f.errAt(p+".heartbeat", "event %d: %s is a delayed write (write.send at %d); only a heartbeat's renewal has a reply", ev.Index, ev.Heartbeat, m.sent.T)
			case m.delivered == nil:
				return f.errAt(p+".heartbeat", "event %d: the reply to heartbeat %s arrives at %d, but %s is not delivered before then: a reply follows its renewal", ev.Index, ev.Heartbeat, ev.T, ev.Heartbeat)
			case m.replied:
				return f.errAt(p+".heartbeat", "event %d: heartbeat %s's reply arrives twice", ev.Index, ev.Heartbeat)
			case m.sent.Actor != ev.Actor:
				return f.errAt(p+".actor", "event %d: heartbeat %s was sent by %s, so its reply goes to %s, not %s", ev.Index, ev.Heartbeat, m.sent.Actor, m.sent.Actor, ev.Actor)
			}
			m.replied = true
		case ActionPause:
			paused[ev.Actor] = ev
		case ActionResume:
			if _, ok := paused[ev.Actor]; !ok {
				return f.errAt(p, "event %d: %s resumes at %d without an earlier pause", ev.Index, ev.Actor, ev.T)
			}
			delete(paused, ev.Actor)
		}
	}
	return nil
}

// msgPath is the path of the field that names an event's message.
func (f *file) msgPath(p string, act Action) string {
	if fieldsOf(act).message {
		return p + ".message"
	}
	return p + ".heartbeat"
}

func deliveryOf(write bool) Action {
	if write {
		return ActionWriteDeliver
	}
	return ActionDeliver
}

// joinWords lists words for a person: "a", "a or b", "a, b or c".
func joinWords(words []string, conj string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}
