package pgtest

import (
	"errors"
	"testing"
)

func TestSoakSetting(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
	}{{"", 1}, {"1", 1}, {"10", 10}} {
		if got, err := soak(c.env); err != nil || got != c.want {
			t.Errorf("%s=%q: %d, %v; want %d", EnvSoak, c.env, got, err, c.want)
		}
	}
	for _, bad := range []string{"0", "-3", "ten", "1.5"} {
		_, err := soak(bad)
		var se *SoakError
		if !errors.As(err, &se) || se.Value != bad {
			t.Errorf("%s=%q: %v; want a SoakError naming the value", EnvSoak, bad, err)
		}
	}
}
