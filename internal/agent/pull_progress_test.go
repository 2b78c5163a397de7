package agent_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/agent"
	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/agent/runtime/runtimetest"
	"github.com/allot-dev/allot/internal/cli"
)

// While the agent pulls a rank's image, 'allot job show' says how far the
// pull has come, as the runtime tells the agent, the agent the server
// (a "pulling" event, at most once per PullProgressEvery) and the server
// the API; once the rank started the line is gone.
func TestPullProgressInJobShow(t *testing.T) {
	const image = "registry.example/team/big:1"
	l := agent.NewTestLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	cfg := l.Config(t, "h100-01")
	cfg.Runtime = &runtimetest.Fake{
		Images:    map[string]runtimetest.Image{image: {Entrypoint: []string{"sh", "-c"}}},
		Progress:  map[string][]runtime.Progress{image: {{Total: 340e6}, {Done: 120e6, Total: 340e6}, {Done: 250_400_000, Total: 340e6}}},
		StepEvery: 150 * time.Millisecond,
		Release:   release,
	}
	cfg.PullProgressEvery = 50 * time.Millisecond
	go func() { _ = agent.Run(ctx, cfg) }()
	id := l.Submit(t, "name: big\ntenant: team\nimage: "+image+"\ncommand: [sh, -c]\nargs: ['echo hi']\nresources: {gpus_per_instance: 1}\n")

	show := func() string {
		t.Helper()
		var out, errs bytes.Buffer
		if code := cli.Run(ctx, []string{"job", "show", id, "--server", l.URL(), "--token", l.Admin()}, &out, &errs); code != 0 {
			t.Fatalf("job show: exit %d: %s", code, errs.String())
		}
		return out.String()
	}
	want := "pulling " + image + ", 250 of 340 MB (rank 0 on h100-01)"
	seen := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := show()
		for _, step := range []string{"0 of 340 MB", "120 of 340 MB", "250 of 340 MB"} {
			if strings.Contains(out, step) {
				seen[step] = true
			}
		}
		if strings.Contains(out, want) {
			if !strings.Contains(out, "Preparing") || !strings.Contains(out, "State") {
				t.Errorf("job show:\n%s\nwant a Preparing job with a Preparing line", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job show never said %q; last:\n%s", want, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("pull steps job show saw: %v", seen)
	close(release)
	l.WaitState(t, id, "Succeeded")
	if out := show(); strings.Contains(out, "pulling") {
		t.Errorf("job show of a job that ran still says it pulls:\n%s", out)
	}
}
