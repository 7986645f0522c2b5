// Package reword gives an error the words its reader needs while keeping
// the original underneath, so errors.Is and errors.As still find it: a
// password scrubbed out, a decoder's Go types said in the file's terms.
package reword

// Error is err, said as msg.
func Error(msg string, err error) error { return &worded{msg: msg, err: err} }

type worded struct {
	msg string
	err error
}

func (e *worded) Error() string { return e.msg }
func (e *worded) Unwrap() error { return e.err }
