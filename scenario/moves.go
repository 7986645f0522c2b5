package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Move is one thing that happens in a run at a logical time: a scripted
// event, or a move a learner chose. A run is its scenario plus an ordered
// log of moves; a scenario's events are its default log.
//
// Every move has a short, stable text form, ACTOR:VERB[ ARG]@T, such as
// B:acquire@1070 or A:deliver hb1@1075, and a log is a comma-separated
// list of them, so a schedule fits in a chat message or a flag.
type Move struct {
	T      int64
	Actor  string
	Action Action
	// Msg names the message a send, deliver, drop or reply acts on.
	Msg string
	// Fence is a direct write's fence.
	Fence *int64
}

// ClockActor is the actor of the clock's moves (expire, advance).
const ClockActor = "clock"

// verbs maps each action to its word in the text form.
var verbs = map[Action]string{
	ActionAcquire:      "acquire",
	ActionSend:         "send",
	ActionDeliver:      "deliver",
	ActionReply:        "reply",
	ActionDrop:         "drop",
	ActionEffect:       "effect",
	ActionWrite:        "write",
	ActionWriteSend:    "post",
	ActionWriteDeliver: "land",
	ActionExpire:       "expire",
	ActionAdvance:      "advance",
	ActionPause:        "pause",
	ActionResume:       "resume",
	ActionRelease:      "release",
	ActionReelect:      "reelect",
}

// Verb is the action's word in a move's text form.
func (a Action) Verb() string {
	if v, ok := verbs[a]; ok {
		return v
	}
	return string(a)
}

// takesMsg reports whether the action names a message.
func (a Action) takesMsg() bool {
	switch a {
	case ActionSend, ActionDeliver, ActionReply, ActionDrop, ActionWriteSend, ActionWriteDeliver:
		return true
	}
	return false
}

// String is the move's text form.
func (m Move) String() string {
	var b strings.Builder
	b.WriteString(m.Actor)
	b.WriteByte(':')
	b.WriteString(m.Action.Verb())
	switch {
	case m.Action.takesMsg():
		b.WriteByte(' ')
		b.WriteString(m.Msg)
	case m.Action == ActionWrite && m.Fence != nil:
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(*m.Fence, 10))
	}
	b.WriteByte('@')
	b.WriteString(strconv.FormatInt(m.T, 10))
	return b.String()
}

// Same reports whether two moves are the same move.
func (m Move) Same(o Move) bool {
	if m.T != o.T || m.Actor != o.Actor || m.Action != o.Action || m.Msg != o.Msg {
		return false
	}
	if (m.Fence == nil) != (o.Fence == nil) {
		return false
	}
	return m.Fence == nil || *m.Fence == *o.Fence
}

// FormatMoves is a log's text form: its moves, comma-separated.
func FormatMoves(log []Move) string {
	parts := make([]string, len(log))
	for i, m := range log {
		parts[i] = m.String()
	}
	return strings.Join(parts, ",")
}

// MaxMoves bounds a log read from text.
const MaxMoves = 10 * MaxEvents

// MoveError is a move in a log's text that cannot be read: Index counts
// from 0, Text is the move as given.
type MoveError struct {
	Index int
	Text  string
	Msg   string
}

func (e *MoveError) Error() string {
	return fmt.Sprintf("move %d %q: %s", e.Index+1, e.Text, e.Msg)
}

// ParseMoves reads a log's text form. Spaces around moves and commas are
// ignored; an empty text is an empty log.
func ParseMoves(text string) ([]Move, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	parts := strings.Split(text, ",")
	if len(parts) > MaxMoves {
		return nil, fmt.Errorf("%d moves: a log may hold at most %d", len(parts), MaxMoves)
	}
	log := make([]Move, 0, len(parts))
	for i, p := range parts {
		m, err := ParseMove(p)
		if err != nil {
			var me *MoveError
			if errors.As(err, &me) {
				me.Index = i
			}
			return nil, err
		}
		log = append(log, m)
	}
	return log, nil
}

// ParseMove reads one move's text form.
func ParseMove(text string) (Move, error) {
	s := strings.TrimSpace(text)
	bad := func(format string, args ...any) (Move, error) {
		return Move{}, &MoveError{Text: s, Msg: fmt.Sprintf(format, args...)}
	}
	who, rest, ok := strings.Cut(s, ":")
	if !ok {
		return bad("want ACTOR:VERB@T, e.g. B:acquire@1070 or A:deliver hb1@1075")
	}
	who = strings.TrimSpace(who)
	if who != ClockActor && !actorRE.MatchString(who) {
		return bad("actor %q: want a short name such as A or B, or clock", who)
	}
	body, at, ok := strings.Cut(rest, "@")
	if !ok {
		return bad("no time: end the move with @T, e.g. @1070")
	}
	t, err := strconv.ParseInt(strings.TrimSpace(at), 10, 64)
	if err != nil || t < 0 || t > maxTime {
		return bad("time %q: want a whole number of ticks, 0..%d", strings.TrimSpace(at), int64(maxTime))
	}
	fields := strings.Fields(body)
	if len(fields) == 0 {
		return bad("no verb between %s: and @", who)
	}
	var act Action
	for a, v := range verbs {
		if v == fields[0] {
			act = a
		}
	}
	if act == "" {
		return bad("verb %q: want one of %s", fields[0], strings.Join(Verbs(), ", "))
	}
	m := Move{T: t, Actor: who, Action: act}
	clockMove := act == ActionExpire || act == ActionAdvance
	if clockMove != (who == ClockActor) {
		if clockMove {
			return bad("%s is the clock's move: write clock:%s@T", fields[0], fields[0])
		}
		return bad("the clock can only expire or advance")
	}
	args := fields[1:]
	switch {
	case act.takesMsg():
		if len(args) != 1 || !timeNameR.MatchString(args[0]) {
			return bad("%s needs one message name, e.g. %s:%s hb1@%d", fields[0], who, fields[0], t)
		}
		m.Msg = args[0]
	case act == ActionWrite:
		if len(args) != 1 {
			return bad("write needs its fence, e.g. %s:write 11@%d", who, t)
		}
		e, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || e < 0 {
			return bad("fence %q: fences are nonnegative whole numbers", args[0])
		}
		m.Fence = &e
	case len(args) > 0:
		return bad("%s takes nothing before @", fields[0])
	}
	return m, nil
}

// Verbs lists the verbs of the text form, in a stable order.
func Verbs() []string {
	out := make([]string, 0, len(verbs))
	for _, a := range AllActions() {
		out = append(out, a.Verb())
	}
	return out
}

// Log is the scenario's default log: its events in time order.
func (s *Scenario) Log() []Move {
	log := make([]Move, len(s.Events))
	for i, ev := range s.Events {
		log[i] = ev.Move()
	}
	return log
}

// Move is the event as a move of the log.
func (e Event) Move() Move {
	return Move{T: e.T, Actor: e.Actor, Action: e.Action, Msg: e.Heartbeat, Fence: e.Fence}
}
