package server

import (
	"context"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// TestGangRanksWaitForTheLastNode: a gang bound onto a node whose previous
// occupant is still stopping (within its grace) gets no rank handed out on
// any node until that occupant's processes are gone; then every node gets
// its rank in the same revision, so the ranks start together.
func TestGangRanksWaitForTheLastNode(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	team := Principal{Tenant: "team"}
	submit := func(doc string) *model.Job {
		t.Helper()
		specs, err := spec.ParseJobs("test", []byte(doc), nil)
		must(err)
		j, err := srv.Submit(ctx, team, specs[0])
		must(err)
		return j
	}
	start := func(id string) {
		t.Helper()
		j := wholeJob(t, srv, id)
		for r, a := range j.Status.Allocations {
			_, err := srv.ReportEvent(ctx, admin, id, len(j.Status.Attempts), Event{Type: EventStarted, Rank: r, Node: a.Node})
			must(err)
		}
	}
	// A spot job and a standard one hold two of the three nodes.
	spotJob := submit(`{name: spot, tenant: team, command: [x], priority: spot, resources: {gpus_per_instance: 8}, checkpoint: {grace: 1m}}`)
	must(srv.Cycle(ctx))
	start(spotJob.ID)
	other := submit(`{name: other, tenant: team, command: [x], resources: {gpus_per_instance: 8}}`)
	must(srv.Cycle(ctx))
	start(other.ID)
	// The gang needs the free node and the spot job's.
	clock.Advance(time.Hour) // past every protection
	gang := submit(`{name: gang, tenant: team, command: [x], resources: {instance_count: 2, gpus_per_instance: 8}}`)
	must(srv.Cycle(ctx))
	g := wholeJob(t, srv, gang.ID)
	victim := wholeJob(t, srv, spotJob.ID)
	if g.Status.State != model.StatePreparing || victim.Status.State != model.StatePreempted {
		t.Fatalf("gang %s, spot job %s; want Preparing and Preempted (stopping)", g.Status.State, victim.Status.State)
	}
	ranks := func() (map[string]int, int64) {
		t.Helper()
		out := map[string]int{}
		var rev int64
		for _, a := range g.Status.Allocations {
			as, err := srv.NodeAssignments(ctx, a.Node, 0, 0)
			must(err)
			rev = as.Rev
			for _, x := range as.Run {
				if x.Job == gang.ID {
					out[a.Node]++
				}
			}
		}
		return out, rev
	}
	if got, _ := ranks(); len(got) != 0 {
		t.Fatalf("ranks handed out while %s still stops on its node: %v", spotJob.ID, got)
	}
	// The spot job's process exits: every node gets its rank at once.
	vnode := victim.Status.Attempts[len(victim.Status.Attempts)-1].Nodes[0]
	_, err := srv.ReportEvent(ctx, admin, spotJob.ID, len(victim.Status.Attempts), Event{Type: EventExited, Rank: 0, Node: vnode, ExitCode: -1, Outcome: "Stopped"})
	must(err)
	if got, _ := ranks(); len(got) != 2 {
		t.Fatalf("after the spot job stopped, ranks on %v, want one on each of the gang's 2 nodes", got)
	}
}
