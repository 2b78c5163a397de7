package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestWithoutAge(t *testing.T) {
	a := "ID  NAME  AGE\nj-1 x     5s\n"
	b := "ID  NAME  AGE\nj-1 x     7s\n"
	c := "ID  NAME  AGE\nj-2 x     7s\n"
	if withoutAge(a, formatTable) != withoutAge(b, formatTable) {
		t.Error("a list whose ages changed counts as changed")
	}
	if withoutAge(a, formatTable) == withoutAge(c, formatTable) {
		t.Error("a list whose jobs changed counts as unchanged")
	}
	if withoutAge(a, formatJSON) != a {
		t.Error("JSON is compared whole")
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
}

func TestJobCommandsRefuseBadUse(t *testing.T) {
	for _, args := range [][]string{
		{"job", "cancel"},
		{"job", "cancel", "j-1", "--name", "x"},
		{"job", "hold"},
		{"job", "update", "j-1"},
		{"job", "update", "j-1", "--begin", "tomorrow"},
		{"job", "list", "--continue", "c1.x"},
		{"job", "list", "--watch", "--interval", "1ms"},
		{"job", "list", "--all", "--state", "Running"},
		{"usage", "--by", "node"},
	} {
		var out, errOut bytes.Buffer
		code := Run(t.Context(), append(args, "--server", "http://127.0.0.1:1", "--token", "t"), &out, &errOut)
		if code != ExitUsage || !strings.HasPrefix(errOut.String(), "allot: ") {
			t.Errorf("allot %v: exit %d, %q; want %d", args, code, errOut.String(), ExitUsage)
		}
	}
}

// TestJobListFilter: without --state the listing asks for the states of
// jobs that have not ended, as squeue; --all for every state.
func TestJobListFilter(t *testing.T) {
	if got := (jobListFlags{}).filter().States; strings.Join(got, ",") != "Blocked,Queued,Preparing,Running,Preempted" {
		t.Errorf("default states %v, want those of jobs that have not ended", got)
	}
	if got := (jobListFlags{all: true}).filter().States; got != nil {
		t.Errorf("--all asks for states %v, want none (every state)", got)
	}
	if got := (jobListFlags{states: []string{"Failed"}}).filter().States; strings.Join(got, ",") != "Failed" {
		t.Errorf("--state Failed asks for %v", got)
	}
}
