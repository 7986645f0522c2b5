package pgtest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatal ends only the goroutine it
// runs on, so that a test can look at a helper's failure.
type fatalRecorder struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// fails runs call with a recorder and returns what it failed with.
func fails(t *testing.T, call func(testing.TB)) string {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		call(rec)
	}()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.failed
}

// A test binary whose TestMain gave pgtest no containers fails a test that
// asks for one, naming the fix: skipping would hide that the test never
// ran against a container on any machine.
func TestAContainerWithoutContainertestFails(t *testing.T) {
	t.Parallel()
	h := newHarness(nil)
	for name, call := range map[string]func(testing.TB){
		"Servers":        func(tb testing.TB) { serversOn(tb, h) },
		"ContainerReady": func(tb testing.TB) { containerReadyOn(tb, h) },
	} {
		got := fails(t, call)
		if !strings.Contains(got, "containertest.Main") {
			t.Errorf("%s without containers failed with %q, want the advice to call containertest.Main", name, got)
		}
	}
	if _, err := h.container.get(); err != errNoContainers {
		t.Errorf("the package's container: %v, want errNoContainers", err)
	}
}

// A watcher without containers told of one says it could not remove it.
func TestWatcherWithoutContainersSaysSo(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	code := watch(strings.NewReader(startedContainers+" some-start\n"), &log, false, nil)
	if code == 0 || !strings.Contains(log.String(), "could not be removed") || !strings.Contains(log.String(), "containertest.Main") {
		t.Errorf("exit %d, log %q: want a failure that names containertest.Main", code, log.String())
	}
}
