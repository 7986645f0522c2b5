package tui

import (
	"strings"
	"testing"
)

// TestKeyOpsRunUnderTheirNames: each key that only queues an op starts it
// at once, named on the busy line, and its outcome leaves the model idle
// with no error shown. The names are the busy line's words.
func TestKeyOpsRunUnderTheirNames(t *testing.T) {
	t.Parallel()
	m := at1075(t, blindOff(), 120, 40)
	want := []string{"next", "previous", "tick forward", "tick back", "start", "end", "renewal toggle", "fencing cycle", "export"}
	ops := m.keyOps()
	if len(ops) != len(want) {
		t.Fatalf("%d keys queue an op, want %d: %v", len(ops), len(want), ops)
	}
	for i, ko := range ops {
		name := ko.op.String()
		if name != want[i] {
			t.Errorf("key %q queues %q, want %q", ko.key.Help().Key, name, want[i])
		}
		nm, cmd := m.Update(keyMsg(ko.key.Keys()[0]))
		m = nm.(Model)
		if m.Running != name || cmd == nil {
			t.Fatalf("key %q: busy with %q, want %q now", ko.key.Help().Key, m.Running, name)
		}
		if v := m.View(); !strings.Contains(v, "● running "+name) {
			t.Errorf("key %q: the busy line does not name %q:\n%s", ko.key.Help().Key, name, v)
		}
		for _, msg := range runCmd(cmd) {
			m = send(t, m, msg)
		}
		if m.Busy() || m.Failure != nil {
			t.Fatalf("after %s: busy %v, error %v", name, m.Busy(), m.Failure)
		}
	}
}
