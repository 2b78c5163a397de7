package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

// rolloutPoll is how often --wait asks for the endpoints' state.
var rolloutPoll = time.Second

// waitFlag adds --wait to an endpoint command that may start a rollout.
func waitFlag(cmd *cobra.Command, wait *time.Duration) {
	cmd.Flags().DurationVar(wait, "wait", 0, "wait this long for the rollout to end, printing its progress, as kubectl rollout status "+
		"does; exit status 1 when it has not ended by then (it goes on) (0: do not wait)")
}

// waitRollouts waits, at most limit, until no endpoint of eps rolls out
// (rollout_since is null), writing each change of progress to log, and
// returns the endpoints as they then are. One that is still rolling out
// at the limit is an error that says what its new replicas wait for.
func waitRollouts(cmd *cobra.Command, cl *client.Client, eps []client.Endpoint, limit time.Duration, log io.Writer) ([]client.Endpoint, error) {
	deadline := time.Now().Add(limit)
	last := map[string]string{}
	for {
		pending := 0
		for i, e := range eps {
			if e.RolloutSince.IsZero() {
				continue
			}
			fresh, err := cl.GetEndpoint(cmd.Context(), e.Name)
			if err != nil {
				return eps, fromAPI(err)
			}
			eps[i] = fresh
			if fresh.RolloutSince.IsZero() {
				fmt.Fprintf(log, "%s: rolled out template %s\n", fresh.Name, fresh.Template)
				continue
			}
			pending++
			if line := templateLine(fresh); line != last[fresh.Name] {
				last[fresh.Name] = line
				fmt.Fprintf(log, "%s: %s\n", fresh.Name, line)
			}
		}
		if pending == 0 {
			return eps, nil
		}
		if !time.Now().Before(deadline) {
			var late []string
			for _, e := range eps {
				if !e.RolloutSince.IsZero() {
					late = append(late, fmt.Sprintf("%s (%s%s)", e.Name, templateLine(e), waitingFor(e)))
				}
			}
			return eps, fmt.Errorf("the rollout has not ended after %s, and goes on: %s; 'allot endpoint show NAME' follows it",
				limit, strings.Join(late, "; "))
		}
		select {
		case <-cmd.Context().Done():
			return eps, cmd.Context().Err()
		case <-time.After(min(rolloutPoll, time.Until(deadline))):
		}
	}
}

// waitingFor names the new replicas of e that do not run yet, with why.
func waitingFor(e client.Endpoint) string {
	var out []string
	for _, r := range e.Replicas {
		if r.Outdated || r.State == "Running" {
			continue
		}
		s := r.Job + " " + r.State
		if r.Reason != "" {
			s += " for " + r.Reason
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return ""
	}
	return "; waiting: " + strings.Join(out, ", ") + " ('allot job why JOB')"
}
