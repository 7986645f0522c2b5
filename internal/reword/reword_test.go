package reword

import (
	"errors"
	"io/fs"
	"testing"

	"go.uber.org/goleak"
)

func TestErrorSaysMsgAndKeepsTheCause(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}
	err := Error("x is not there", cause)
	if err.Error() != "x is not there" {
		t.Errorf("Error() = %q", err.Error())
	}
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe != cause {
		t.Errorf("the cause is lost: %v", err)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
