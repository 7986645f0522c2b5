package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ask is a predict-then-reveal question put to the viewer before an
// event's step runs. The file never writes the right answer down: it
// depends on the knobs, so the step's real result decides it. About names
// which fact of that result does.
type Ask struct {
	Question string
	// Choices are what the viewer picks from, 2 to MaxChoices of them,
	// unique, in the file's order.
	Choices []string
	About   About
	// Pos is "line:column" of the ask in its file, when known.
	Pos string
}

// About names the fact of a step's real result that decides an Ask.
type About string

const (
	// AboutTag is the command tag the server answered the step's statement
	// with, such as "UPDATE 1" or "UPDATE 0"; "" when the step sent none.
	AboutTag About = "tag"
	// AboutResult is how the step went: ResultDone, ResultRefused or
	// ResultNoCall.
	AboutResult About = "result"
	// AboutVerdict is the run's verdict right after the step, by Judge:
	// VerdictConflict, VerdictBlocked or VerdictSafe.
	AboutVerdict About = "verdict"
	// AboutOwner is the lease row's owner right after the step.
	AboutOwner About = "owner"
	// AboutAccepted is whether the resource accepted the step's write:
	// AcceptedYes, or AcceptedNo when it refused it or no write reached it.
	AboutAccepted About = "accepted"
)

// The step results an AboutResult question chooses between.
const (
	// ResultDone is a step that ran and the server or resource said yes.
	ResultDone = "done"
	// ResultRefused is zero rows at the coordinator or a 409 from the resource.
	ResultRefused = "refused"
	// ResultNoCall is a step whose actor made no call: it knew better, held
	// nothing, or the step has nothing to call (a pause, a send).
	ResultNoCall = "no call"
)

// The answers to an AboutAccepted question.
const (
	AcceptedYes = "yes"
	AcceptedNo  = "no"
)

// Abouts lists every fact a question may be about.
func Abouts() []About {
	return []About{AboutTag, AboutResult, AboutVerdict, AboutOwner, AboutAccepted}
}

// Values lists every value the fact can take when that list is closed (result,
// verdict, accepted), and nil when it is open (tag, owner).
func (a About) Values() []string {
	switch a {
	case AboutResult:
		return []string{ResultDone, ResultRefused, ResultNoCall}
	case AboutVerdict:
		return Verdicts()
	case AboutAccepted:
		return []string{AcceptedYes, AcceptedNo}
	}
	return nil
}

// Right returns the choice that the step's fact makes right, and false when
// no choice matches it (the author offered no right answer under these
// knobs; the screen should then show the fact itself).
func (a Ask) Right(fact string) (answer string, ok bool) {
	fact = strings.TrimSpace(fact)
	for _, c := range a.Choices {
		if c == fact {
			return c, true
		}
	}
	return "", false
}

// Bounds on a question, so it fits the prompt on an 80-column screen.
const (
	MaxChoices       = 6
	MaxChoiceRunes   = 32
	MaxQuestionRunes = 200
	minChoices       = 2
)

// commandTagRE is a PostgreSQL command tag: "UPDATE 1", "INSERT 0 1".
var commandTagRE = regexp.MustCompile(`^[A-Z]+( [0-9]+){0,2}$`)

type fileAsk struct {
	Question string   `yaml:"question"`
	Choices  []string `yaml:"choices"`
	About    string   `yaml:"about"`
}

// asksFor lists the facts a question on an action may be about: every step
// has a result, and a verdict and an owner after it; only a step that
// calls the coordinator or the resource has a tag; only one that writes to
// the resource has an accepted write.
func asksFor(act Action) []About {
	all := []About{AboutResult, AboutVerdict, AboutOwner}
	switch act {
	case ActionEffect, ActionWrite, ActionWriteDeliver:
		return append(all, AboutTag, AboutAccepted)
	case ActionAcquire, ActionDeliver, ActionRelease, ActionReelect, ActionExpire:
		return append(all, AboutTag)
	}
	return all
}

// ask checks an event's question, all but what needs the whole scenario
// (see checkAskOwners).
func (f *file) ask(p string, i int, act Action, fa *fileAsk) (*Ask, error) {
	p += ".ask"
	a := &Ask{Question: strings.TrimSpace(fa.Question), About: About(fa.About)}
	if l, c := f.at(p); l > 0 {
		a.Pos = fmt.Sprintf("%d:%d", l, c)
	}
	if a.About == "" {
		return nil, f.errAt(p, "event %d: ask needs about: %s (the fact of the step's real result that decides the answer)", i, joinWords(abouts(Abouts()), "or"))
	}
	if !slices.Contains(Abouts(), a.About) {
		return nil, f.errAt(p+".about", "event %d: ask about %q: want one of %s (the fact of the step's real result that decides the answer)", i, fa.About, joinWords(abouts(Abouts()), "or"))
	}
	if ok := asksFor(act); !slices.Contains(ok, a.About) {
		why := "sends no statement, so it has no command tag"
		if a.About == AboutAccepted {
			why = "writes nothing to the resource, so it has no accepted write"
		}
		return nil, f.errAt(p+".about", "event %d: %s %s to ask about; ask about %s", i, act, why, joinWords(abouts(ok), "or"))
	}
	if a.Question == "" {
		return nil, f.errAt(p, "event %d: ask needs question: the text put to the viewer", i)
	}
	if err := plainText(a.Question, MaxQuestionRunes); err != nil {
		return nil, f.errAt(p+".question", "event %d: question %v", i, err)
	}
	if n := len(fa.Choices); n < minChoices || n > MaxChoices {
		return nil, f.errAt(p, "event %d: ask offers %d under choices:; want %d to %d", i, n, minChoices, MaxChoices)
	}
	for j, c := range fa.Choices {
		cp := fmt.Sprintf("%s.choices[%d]", p, j)
		c = strings.TrimSpace(c)
		if c == "" {
			return nil, f.errAt(cp, "event %d: choice %d is empty", i, j+1)
		}
		if err := plainText(c, MaxChoiceRunes); err != nil {
			return nil, f.errAt(cp, "event %d: choice %q %v", i, c, err)
		}
		if slices.Contains(a.Choices, c) {
			return nil, f.errAt(cp, "event %d: choice %q is offered twice", i, c)
		}
		if vals := a.About.Values(); vals != nil && !slices.Contains(vals, c) {
			return nil, f.errAt(cp, "event %d: choice %q can never be right: a question about %s is answered %s", i, c, a.About, joinWords(quoted(vals), "or"))
		}
		if a.About == AboutTag && !commandTagRE.MatchString(c) {
			return nil, f.errAt(cp, "event %d: choice %q can never be right: a command tag is written as the server sends it, such as UPDATE 1 or INSERT 0 1", i, c)
		}
		a.Choices = append(a.Choices, c)
	}
	return a, nil
}

// checkAskOwners checks questions about the lease's owner, which need
// every actor of the scenario: each choice must be one of them.
func (f *file) checkAskOwners(s *Scenario) error {
	var actors []string
	for _, a := range s.Actors() {
		if a != ClockActor {
			actors = append(actors, a)
		}
	}
	for _, ev := range s.Events {
		if ev.Ask == nil || ev.Ask.About != AboutOwner {
			continue
		}
		p := fmt.Sprintf("$.events[%d].ask", ev.Index)
		if s.Initial == nil {
			return f.errAt(p+".about", "event %d: the lease row never exists in this scenario (no initial.coordinator), so it has no owner to ask about", ev.Index)
		}
		for j, c := range ev.Ask.Choices {
			if !slices.Contains(actors, c) {
				return f.errAt(fmt.Sprintf("%s.choices[%d]", p, j), "event %d: choice %q can never be right: the owner is one of the scenario's actors, %s", ev.Index, c, joinWords(actors, "or"))
			}
		}
	}
	return nil
}

// plainText refuses text that would not show as one plain line: control
// characters (a terminal would obey escape sequences) or too many runes.
func plainText(s string, limit int) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > limit {
		return fmt.Errorf("is %d characters; at most %d", n, limit)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fmt.Errorf("holds a control character (%U); write plain text on one line", []rune(s[i:])[0])
	}
	return nil
}

func abouts(as []About) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}

func quoted(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}
