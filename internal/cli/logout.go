package cli

import (
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// A job's log is whatever its processes wrote: bytes a hostile job chose
// to set a terminal's title, clear its screen, write its clipboard (OSC 52)
// or overwrite a line with a forged one. The commands that print a log
// (job logs, job run --attach) pass it through logOutput.

// terminal reports whether a command's output is a terminal; tests set it
// to see what a terminal would be sent.
var terminal = isTerminal

// logOutput is where a command prints a job's log to out: out itself when
// raw is set or out is no terminal (a file or a pipe gets the bytes), else
// a writer that shows control characters as escapes. Call the returned
// flush once the log is printed.
func logOutput(out io.Writer, raw bool) (io.Writer, func() error) {
	if raw || !terminal(out) {
		return out, func() error { return nil }
	}
	e := &escaper{w: out}
	return e, e.flush
}

// rawFlagUsage is the help of --raw.
const rawFlagUsage = "print the log's bytes as the job wrote them, escape sequences included (on a terminal they are shown as \\x1b by default)"

// escaper writes what passes through it with control characters (but
// newline and tab), runes a terminal does not print as themselves and
// invalid UTF-8 written as Go escapes (\x1b, \r, \u202e), as escape does
// for one value, so that lines stay lines and nothing else reaches the
// terminal as a command. A rune split between two writes is held until its
// rest comes.
type escaper struct {
	w    io.Writer
	part []byte // the start of a rune whose rest has not come yet
}

func (e *escaper) Write(p []byte) (int, error) {
	buf := append(e.part, p...)
	e.part = nil
	out := make([]byte, 0, len(buf))
	for i := 0; i < len(buf); {
		if !utf8.FullRune(buf[i:]) {
			e.part = append([]byte(nil), buf[i:]...)
			break
		}
		r, size := utf8.DecodeRune(buf[i:])
		out = appendLogRune(out, buf[i:i+size], r)
		i += size
	}
	if _, err := e.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes the start of a rune that never ended, escaped.
func (e *escaper) flush() error {
	if len(e.part) == 0 {
		return nil
	}
	var out []byte
	for _, b := range e.part {
		out = fmt.Appendf(out, `\x%02x`, b)
	}
	e.part = nil
	_, err := e.w.Write(out)
	return err
}

// appendLogRune appends the rune r, encoded as raw, as a terminal may
// show it.
func appendLogRune(out, raw []byte, r rune) []byte {
	switch {
	case r == '\n' || r == '\t':
		return append(out, raw...)
	case r == utf8.RuneError && len(raw) == 1:
		return fmt.Appendf(out, `\x%02x`, raw[0])
	case unicode.IsPrint(r):
		return append(out, raw...)
	}
	q := strconv.QuoteRune(r) // '\x1b', '\u202e'
	return append(out, q[1:len(q)-1]...)
}
