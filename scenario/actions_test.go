package scenario_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/scenario"
)

// head is a scenario up to its events: they start on line 8.
const head = "name: x\nwindow: {from: 0, to: 100}\nttl: 50\n" +
	"initial:\n  coordinator: {owner: A, fence: 1, lease_version: 1, expires_at: 50}\n" +
	"  resource: {epoch: 1, value: v1}\nevents:\n"

const tail = "expect:\n  - {renewal: '*', fencing: '*', effects: 0, verdict: safe}\n"

// withEvents is a whole scenario with these events, one per line.
func withEvents(events ...string) string {
	var b strings.Builder
	b.WriteString(head)
	for _, e := range events {
		b.WriteString("  - " + e + "\n")
	}
	b.WriteString(tail)
	return b.String()
}

// refusal is a file that must be refused at the first occurrence of needle
// on line (1-based), with a message containing msg.
type refusal struct {
	name   string
	src    string
	line   int
	needle string
	msg    string
}

// posOf is "x.yaml:L:C:" with C the 1-based column of needle on line L.
func posOf(t *testing.T, src string, line int, needle string) string {
	t.Helper()
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		t.Fatalf("test case: no line %d", line)
	}
	col := strings.Index(lines[line-1], needle)
	if col < 0 {
		t.Fatalf("test case: %q is not on line %d: %q", needle, line, lines[line-1])
	}
	return fmt.Sprintf("x.yaml:%d:%d: ", line, col+1)
}

func checkRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenario.Parse("x.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.src)
			}
			var se *scenario.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *scenario.Error: %v", err, err)
			}
			want := posOf(t, c.src, c.line, c.needle)
			if !strings.HasPrefix(err.Error(), want) || !strings.Contains(se.Msg, c.msg) {
				t.Fatalf("error %q\nwant it to start %q and contain %q", err, want, c.msg)
			}
		})
	}
}

func TestNewActionsMisuseIsRefusedWithLineAndColumn(t *testing.T) {
	checkRefusals(t, []refusal{
		// pause and resume
		{"pause of an actor that does not exist", withEvents(
			"{t: 1, actor: A, action: effect}",
			"{t: 2, actor: Z, action: pause}",
		), 9, "Z", "pause of Z, who is not in this scenario"},
		{"an actor named only by its pause and resume does not exist", withEvents(
			"{t: 1, actor: Z, action: pause}",
			"{t: 2, actor: Z, action: resume}",
		), 8, "Z", "pause of Z, who is not in this scenario"},
		{"resume without a pause", withEvents(
			"{t: 1, actor: A, action: effect}",
			"{t: 2, actor: A, action: resume}",
		), 9, "{", "A resumes at 2 without an earlier pause"},
		{"resume of an actor that does not exist", withEvents(
			"{t: 2, actor: Q, action: resume}",
		), 8, "Q", "resume of Q, who is not in this scenario"},
		{"second resume", withEvents(
			"{t: 1, actor: A, action: pause}",
			"{t: 2, actor: A, action: resume}",
			"{t: 3, actor: A, action: resume}",
		), 10, "{", "A resumes at 3 without an earlier pause"},
		{"a pause of a paused actor", withEvents(
			"{t: 1, actor: A, action: pause}",
			"{t: 2, actor: A, action: pause}",
		), 9, "{", "A is paused already, since 1 (8:5)"},
		{"an effect by a paused actor", withEvents(
			"{t: 1, actor: A, action: pause}",
			"{t: 2, actor: A, action: effect}",
		), 9, "{", "A is paused at 1 (8:5) until it resumes, so its effect at 2 cannot happen"},
		{"a delivery of a paused actor's heartbeat", withEvents(
			"{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
			"{t: 2, actor: A, action: pause}",
			"{t: 3, actor: A, action: heartbeat.deliver, heartbeat: hb1}",
		), 10, "{", "A is paused at 2 (9:5) until it resumes, so its heartbeat.deliver at 3"},
		// Order is by time: the pause written first happens after the effect.
		{"a paused actor is checked in time order", withEvents(
			"{t: 5, actor: A, action: pause}",
			"{t: 3, actor: A, action: effect}",
			"{t: 7, actor: A, action: effect}",
		), 10, "{", "A is paused at 5 (8:5)"},
		{"pause with a value", withEvents("{t: 1, actor: A, action: pause, value: 1}"), 8, "1}", "value is only for effect, write and write.send"},
		{"pause with no actor", withEvents("{t: 1, action: pause}"), 8, "{", "actor \"\""},
		{"the clock cannot pause", withEvents("{t: 1, actor: clock, action: pause}"), 8, "clock", "clock is the clock's name"},

		// write.send and write.deliver
		{"delivery of a write never sent", withEvents(
			"{t: 1, actor: A, action: write.deliver, message: w1}",
		), 8, "w1", "write w1 is delivered at 1 but not sent before then"},
		{"write delivered before it is sent", withEvents(
			"{t: 5, actor: A, action: write.send, message: w1}",
			"{t: 2, actor: A, action: write.deliver, message: w1}",
		), 9, "w1", "write w1 is delivered at 2 but not sent before then"},
		{"write delivered twice", withEvents(
			"{t: 1, actor: A, action: write.send, message: w1}",
			"{t: 2, actor: A, action: write.deliver, message: w1}",
			"{t: 3, actor: A, action: write.deliver, message: w1}",
		), 10, "w1", "write w1 is delivered twice (first at 2, 9:5)"},
		{"write delivered by another actor", withEvents(
			"{t: 1, actor: A, action: write.send, message: w1}",
			"{t: 2, actor: B, action: write.deliver, message: w1}",
		), 9, "B", "write w1 was sent by A, so B cannot deliver it"},
		{"a heartbeat delivered as a write", withEvents(
			"{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
			"{t: 2, actor: A, action: write.deliver, message: hb1}",
		), 9, "write.deliver", "hb1 is a heartbeat, sent with heartbeat.send at 1, so it arrives with heartbeat.deliver, not write.deliver"},
		{"a write delivered as a heartbeat", withEvents(
			"{t: 1, actor: A, action: write.send, message: w1}",
			"{t: 2, actor: A, action: heartbeat.deliver, heartbeat: w1}",
		), 9, "heartbeat.deliver", "w1 is a write, sent with write.send at 1, so it arrives with write.deliver"},
		{"message names are shared by heartbeats and writes", withEvents(
			"{t: 1, actor: A, action: heartbeat.send, heartbeat: m}",
			"{t: 2, actor: A, action: write.send, message: m}",
		), 9, "m}", "write m is sent twice (first at 1, 8:5)"},
		{"write.send without its name", withEvents("{t: 1, actor: A, action: write.send, value: 1}"), 8, "{", "write.send needs message: NAME"},
		{"write.send named with heartbeat:", withEvents("{t: 1, actor: A, action: write.send, heartbeat: w1}"), 8, "w1", "write.send names its write with message: NAME, not heartbeat:"},
		{"write.send with a bad name", withEvents("{t: 1, actor: A, action: write.send, message: \"w 1\"}"), 8, "\"w 1\"", "message name \"w 1\""},
		{"write.send with an epoch", withEvents("{t: 1, actor: A, action: write.send, message: w1, epoch: 3}"), 8, "3}", "epoch is only for write (write.send uses the actor's fence)"},
		{"write.deliver with a value", withEvents(
			"{t: 1, actor: A, action: write.send, message: w1}",
			"{t: 2, actor: A, action: write.deliver, message: w1, value: 9}",
		), 9, "9}", "value is only for effect, write and write.send"},
		{"message on an effect", withEvents("{t: 1, actor: A, action: effect, message: w1}"), 8, "w1", "message is only for write.send and write.deliver"},
		{"heartbeat.deliver named with message:", withEvents(
			"{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
			"{t: 2, actor: A, action: heartbeat.deliver, message: hb1}",
		), 9, "hb1", "heartbeat.deliver names its heartbeat with heartbeat: NAME, not message:"},
		{"snapshot on a write.send", withEvents("{t: 1, actor: A, action: write.send, message: w1, snapshot: {owner: A, fence: 1, lease_version: 1, expires_at: 9}}"), 8, "{owner", "snapshot is only for heartbeat.send"},

		// heartbeat.reply
		{"reply to a heartbeat never sent", withEvents(
			"{t: 1, actor: A, action: heartbeat.reply, heartbeat: hb1}",
		), 8, "hb1", "the reply to heartbeat hb1 arrives at 1, but hb1 is not sent before then"},
		{"reply before the delivery", withEvents(
			"{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
			"{t: 2, actor: A, action: heartbeat.reply, heartbeat: hb1}",
			"{t: 3, actor: A, action: heartbeat.deliver, heartbeat: hb1}",
		), 9, "hb1", "hb1 is not delivered before then: a reply follows its renewal"},
		{"reply twice", withEvents(
			"{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
			"{t: 2, actor: A, action: heartbeat.deliver, heartbeat: hb1}",
			"{t: 3, actor: A, action: heartbeat.reply, heartbeat: hb1}",
			"{t: 4, actor: A, action: heartbeat.reply, heartbeat: hb1}",
		), 11, "hb1", "heartbeat hb1's reply arrives twice"},
		{"reply to another actor", withEvents(
			"{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
			"{t: 2, actor: A, action: heartbeat.deliver, heartbeat: hb1}",
			"{t: 3, actor: B, action: heartbeat.reply, heartbeat: hb1}",
		), 10, "B", "its reply goes to A, not B"},
		{"reply to a write", withEvents(
			"{t: 1, actor: A, action: write.send, message: w1}",
			"{t: 2, actor: A, action: write.deliver, message: w1}",
			"{t: 3, actor: A, action: heartbeat.reply, heartbeat: w1}",
		), 10, "w1", "w1 is a delayed write (write.send at 1); only a heartbeat's renewal has a reply"},
		{"reply named with message:", withEvents(
			"{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
			"{t: 2, actor: A, action: heartbeat.deliver, heartbeat: hb1}",
			"{t: 3, actor: A, action: heartbeat.reply, message: hb1}",
		), 10, "hb1", "heartbeat.reply names its heartbeat with heartbeat: NAME, not message:"},

		// release
		{"release with an epoch", withEvents("{t: 1, actor: A, action: release, epoch: 1}"), 8, "1}", "epoch is only for write"},
		{"release with a heartbeat", withEvents("{t: 1, actor: A, action: release, heartbeat: hb1}"), 8, "hb1", "heartbeat is only for heartbeat.send, heartbeat.deliver and heartbeat.reply"},
		{"release without a lease row", "name: x\nwindow: {from: 0, to: 100}\nttl: 50\nevents:\n  - {t: 1, actor: A, action: release}\n" + tail,
			5, "{", "release gives up the lease row, so initial.coordinator must declare it"},

		// reelect
		{"reelect without a lease row", "name: x\nwindow: {from: 0, to: 100}\nttl: 50\nevents:\n  - {t: 1, actor: A, action: reelect}\n" + tail,
			5, "{", "reelect extends the lease row, so initial.coordinator must declare it"},
		{"reelect with a value", withEvents("{t: 1, actor: A, action: reelect, value: 1}"), 8, "1}", "value is only for effect, write and write.send"},
		{"reelect with a heartbeat", withEvents("{t: 1, actor: A, action: reelect, heartbeat: hb1}"), 8, "hb1", "heartbeat is only for heartbeat.send"},
		{"reelect by a paused actor", withEvents(
			"{t: 1, actor: A, action: pause}",
			"{t: 2, actor: A, action: reelect}",
		), 9, "{", "A is paused at 1 (8:5) until it resumes, so its reelect at 2 cannot happen"},

		// the clock and the list of actions
		{"expire by an actor", withEvents("{t: 1, actor: A, action: expire}"), 8, "A", "expire is the clock's: leave actor out"},
		{"an unknown action lists the new ones", withEvents("{t: 1, actor: A, action: freeze}"), 8, "freeze",
			"want one of acquire, heartbeat.send, heartbeat.deliver, heartbeat.reply, effect, write, write.send, write.deliver, expire, pause, resume, release, reelect"},
	})
}

// The same actions used as they should be are accepted, and each event
// reads back as its move.
func TestNewActionsUsedWellAreAccepted(t *testing.T) {
	src := withEvents(
		"{t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}",
		"{t: 2, actor: A, action: heartbeat.deliver, heartbeat: hb1}",
		"{t: 3, actor: A, action: pause}",
		"{t: 4, actor: B, action: write.send, message: w1, value: {k: [1, 2]}}",
		"{t: 5, actor: A, action: resume}",
		"{t: 5, actor: A, action: heartbeat.reply, heartbeat: hb1}",
		"{t: 6, actor: B, action: write.deliver, message: w1}",
		"{t: 7, actor: A, action: pause}",
		"{t: 8, actor: A, action: resume}",
		"{t: 9, actor: A, action: release}",
		"{t: 9, actor: clock, action: expire}",
		"{t: 10, actor: B, action: reelect}",
	)
	s, err := scenario.Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := "A:send hb1@1,A:deliver hb1@2,A:pause@3,B:post w1@4,A:resume@5,A:reply hb1@5,B:land w1@6,A:pause@7,A:resume@8,A:release@9,clock:expire@9,B:reelect@10"
	if got := scenario.FormatMoves(s.Log()); got != want {
		t.Fatalf("log\n got %s\nwant %s", got, want)
	}
	if got := string(s.Events[3].Value); got != `{"k":[1,2]}` {
		t.Errorf("write.send value %s", got)
	}
	if s.Events[3].Heartbeat != "w1" || s.Events[6].Heartbeat != "w1" {
		t.Errorf("a write's name must reach Event.Heartbeat: %q, %q", s.Events[3].Heartbeat, s.Events[6].Heartbeat)
	}
	if got := s.Actors(); strings.Join(got, ",") != "A,B,clock" {
		t.Errorf("actors %v", got)
	}
}

// The example file uses every action a file may use; its log's text form
// reads back as the same moves.
func TestEveryActionExampleRoundTripsThroughTheMoveLog(t *testing.T) {
	s, err := scenario.LoadFile("testdata/every-action.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var used []scenario.Action
	for _, ev := range s.Events {
		used = append(used, ev.Action)
	}
	for _, a := range scenario.Actions() {
		if !slices.Contains(used, a) {
			t.Errorf("the example does not use %s", a)
		}
	}
	log := s.Log()
	text := scenario.FormatMoves(log)
	back, err := scenario.ParseMoves(text)
	if err != nil {
		t.Fatalf("the log's own text is refused: %v\n%s", err, text)
	}
	if len(back) != len(log) {
		t.Fatalf("%d moves came back from %d", len(back), len(log))
	}
	for i := range log {
		if !back[i].Same(log[i]) {
			t.Errorf("move %d: %s came back as %s", i, log[i], back[i])
		}
	}
	forms := map[scenario.Action]string{
		scenario.ActionReply: "A:reply hb1@1048", scenario.ActionPause: "A:pause@1050",
		scenario.ActionResume: "A:resume@1110", scenario.ActionWriteSend: "B:post w1@1106",
		scenario.ActionWriteDeliver: "B:land w1@1108", scenario.ActionRelease: "B:release@1115",
		scenario.ActionReelect: "A:reelect@1125",
	}
	for _, ev := range s.Events {
		if want, ok := forms[ev.Action]; ok && ev.Move().String() != want {
			t.Errorf("%s event as a move: %s, want %s", ev.Action, ev.Move(), want)
		}
	}
	if v := s.Times["resume"]; v != 1110 {
		t.Fatalf("times %v", s.Times)
	}
	// Moving the resume before the pause breaks the timeline, and says so.
	if _, err := s.WithTimes(map[string]int64{"resume": 1049}); err == nil || !strings.Contains(err.Error(), "A resumes at 1049 without an earlier pause") {
		t.Fatalf("resume moved before the pause: %v", err)
	}
}

func TestActionLists(t *testing.T) {
	all := scenario.AllActions()
	seen := map[scenario.Action]bool{}
	for _, a := range all {
		if seen[a] {
			t.Errorf("AllActions lists %s twice", a)
		}
		seen[a] = true
	}
	for _, a := range scenario.Actions() {
		if a == scenario.ActionDrop || a == scenario.ActionAdvance {
			t.Errorf("a file may not use %s; it is a learner's move", a)
		}
	}
	if len(all) != len(scenario.Actions())+2 {
		t.Errorf("AllActions %v: want the file actions, drop and advance", all)
	}
	if v := scenario.Verbs(); len(v) != len(all) {
		t.Errorf("verbs %v", v)
	}
}
