package api

import (
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

// TestUnknownStateTeaches checks that a state filter naming no state lists
// every state, Blocked too, and points the words of Slurm and Kubernetes
// to the states they mean here.
func TestUnknownStateTeaches(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Sleeping", "want Blocked, Queued, Preparing, Running, Preempted, Succeeded, Failed, Canceled or TimedOut)"},
		{"Pending", "state=Queued,Blocked"},
		{"PD", "state=Queued,Blocked"},
		{"COMPLETED", "is Succeeded"},
		{"cancelled", "did you mean Canceled?"},
	} {
		_, e := parseJobQuery(map[string][]string{"state": {"running," + tc.in}}, server.Principal{Admin: true})
		if e == nil || e.Field != "state" || !strings.Contains(e.Message, tc.want) || !strings.Contains(e.Message, tc.in) {
			t.Errorf("state %q: %+v, want field state and %q", tc.in, e, tc.want)
		}
	}
	for _, st := range model.States {
		if _, e := parseJobQuery(map[string][]string{"state": {strings.ToLower(string(st))}}, server.Principal{Admin: true}); e != nil {
			t.Errorf("state %s refused: %v", st, e)
		}
	}
}
