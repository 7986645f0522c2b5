package testwait

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// parallelBefore is -test.parallel as go test set it, and parallelChosen
// whether the command line named it, both before WaitingInParallel.
var parallelBefore string
var parallelChosen bool

// TestMain fails the package's run if a goroutine outlives its tests, and
// lets more tests run at once as the waiting packages' TestMains do.
func TestMain(m *testing.M) {
	flag.Parse()
	parallelBefore = flag.Lookup("test.parallel").Value.String()
	flag.Visit(func(f *flag.Flag) { parallelChosen = parallelChosen || f.Name == "test.parallel" })
	WaitingInParallel()
	goleak.VerifyTestMain(m)
}

// TestWaitingInParallel: twice the CPUs, unless -parallel was given, which
// stays as given (go test -parallel 3 ./internal/testwait checks that side).
func TestWaitingInParallel(t *testing.T) {
	got := flag.Lookup("test.parallel").Value.String()
	want := strconv.Itoa(2 * runtime.GOMAXPROCS(0))
	if parallelChosen {
		want = parallelBefore
	}
	if got != want {
		t.Errorf("-test.parallel is %s (before: %s, given on the command line: %v), want %s", got, parallelBefore, parallelChosen, want)
	}
}

// TestTimeoutScales: the scale multiplies the 10 s base when it is a number
// in (0, 1000]; anything else (unset, zero, negative, not a number, too
// large) leaves the base.
func TestTimeoutScales(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", 10 * time.Second},
		{"1", 10 * time.Second},
		{"3", 30 * time.Second},
		{"0.5", 5 * time.Second},
		{"0", 10 * time.Second},
		{"-1", 10 * time.Second},
		{"-2", 10 * time.Second},
		{"abc", 10 * time.Second},
		{"NaN", 10 * time.Second},
		{"1000", 10000 * time.Second},
		{"1001", 10 * time.Second},
		{"1e9", 10 * time.Second},
	} {
		t.Setenv(envScale, c.env)
		if got := Timeout(); got != c.want {
			t.Errorf("%s=%q: Timeout() = %s, want %s", envScale, c.env, got, c.want)
		}
	}
}

// TestTimeoutUnset: with the variable absent, not just empty, the base.
func TestTimeoutUnset(t *testing.T) {
	t.Setenv(envScale, "") // restores the caller's value when the test ends
	if err := os.Unsetenv(envScale); err != nil {
		t.Fatal(err)
	}
	if got := Timeout(); got != 10*time.Second {
		t.Errorf("%s unset: Timeout() = %s, want 10s", envScale, got)
	}
}

// Eventually returns as soon as the condition holds, checking again while
// it does not, and gives up at its limit with an error saying how long it
// waited.
func TestEventually(t *testing.T) {
	calls := 0
	if err := eventually(time.Minute, func() bool { calls++; return calls == 5 }); err != nil || calls != 5 {
		t.Errorf("a condition true at the 5th check: %v after %d checks", err, calls)
	}
	calls = 0
	if err := eventually(time.Minute, func() bool { calls++; return true }); err != nil || calls != 1 {
		t.Errorf("a condition true at once: %v after %d checks", err, calls)
	}
	began := time.Now()
	err := eventually(30*time.Millisecond, func() bool { return false })
	if err == nil {
		t.Fatal("a condition never true: no error")
	}
	if took := time.Since(began); took < 30*time.Millisecond {
		t.Errorf("gave up after %s, before its 30ms", took)
	}
	if want := "still not so after 30ms"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestEventuallyPasses: Eventually itself returns without failing the test
// once the condition holds.
func TestEventuallyPasses(t *testing.T) {
	calls := 0
	Eventually(t, "the third check", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("returned after %d checks, want 3", calls)
	}
}
