package cli

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"train-llama", "train-llama"},
		{"entraînement 训练", "entraînement 训练"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"two\nlines\ttab\r", `two\nlines\ttab\r`},
		{"bell\a nul\x00", `bell\a nul\x00`},
		{"abc\u202egpj.exe", `abc\u202egpj.exe`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"c1\u009bcontrol", `c1\u009bcontrol`},
	} {
		if got := escape(tc.in); got != tc.want {
			t.Errorf("escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Tables and fields print no raw control bytes, whatever the server sent.
func TestTablesEscapeControlCharacters(t *testing.T) {
	evil := "job\x1b]0;owned\x07\x1b[2J\r\nFAKE\tROW\u202e\x9b"
	var buf bytes.Buffer
	tb := table{header: []string{"ID", "NAME"}}
	tb.add("id-1", evil)
	if err := tb.print(&buf); err != nil {
		t.Fatal(err)
	}
	var fs fields
	fs.add("Name", evil)
	if err := fs.print(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("%d lines, want 3 (header, row, field):\n%s", n, out)
	}
	for i, r := range out {
		if r == '\n' || r == ' ' {
			continue
		}
		if !unicode.IsPrint(r) || (r == utf8.RuneError && !utf8.ValidString(out[i:i+1])) {
			t.Fatalf("output holds %U at byte %d:\n%q", r, i, out)
		}
	}
	if !strings.Contains(out, `job\x1b]0;owned\a\x1b[2J\r\nFAKE\tROW\u202e`) {
		t.Errorf("the name is not shown escaped:\n%s", out)
	}
}
