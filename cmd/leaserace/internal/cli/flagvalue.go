package cli

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/leaserace/leaserace/internal/reword"

	"github.com/spf13/pflag"
)

// FlagValue rewords a flag value that did not parse in the words the
// commands' own checks use ("--runs -1: want 1 to 1000000"): the flag, the
// value, and what it takes, without the parser's internals. Other errors
// come back as they are.
func FlagValue(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	var want string
	switch iv.GetFlag().Value.Type() {
	case "int", "int8", "int16", "int32", "int64":
		want = "want a whole number"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		want = "want a whole number, 0 or more"
	case "bool":
		want = "want true or false"
	case "duration":
		want = "want a duration with its unit, such as 90s, 30m or 2h"
	default:
		return err
	}
	var num *strconv.NumError
	if errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange) {
		want = "out of range; " + want
	}
	return reword.Error(fmt.Sprintf("--%s %q: %s", iv.GetFlag().Name, iv.GetValue(), want), err)
}
