package frag

import (
	"testing"

	"github.com/allot-dev/allot/internal/trace/openb"
)

const traces = "../../../data/traces/openb/"

func loadTrace(t testing.TB, workload string) ([]openb.Node, []openb.Pod) {
	t.Helper()
	nodes, err := openb.ReadNodesFile(traces + "openb_node_list_gpu_node.csv")
	if err != nil {
		t.Fatalf("the traces the repository ships (data/traces): %v", err)
	}
	pods, err := openb.ReadPodsFile(traces + "openb_pod_list_" + workload + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	return nodes, pods
}

// TestArrivalsMatchPaper checks the seed-42 arrival order of the default
// workload against the figures FGD-PROTOCOL.md recorded from the paper's
// simulator.
func TestArrivalsMatchPaper(t *testing.T) {
	nodes, pods := loadTrace(t, "default")
	a := Arrivals(pods, nodes, 1.3, 42)
	if len(a.Pods) != 10866 {
		t.Errorf("arrivals = %d, want 10866", len(a.Pods))
	}
	var milli int64
	for _, p := range a.Pods {
		milli += pods[p].TotalMilli()
	}
	if milli != 8075080 {
		t.Errorf("arrived milli = %d, want 8075080", milli)
	}
	for i, want := range map[int]string{0: "openb-pod-0255", 1: "openb-pod-1685", 2: "openb-pod-6784", 8152: "openb-pod-3888", 10865: "openb-pod-5877"} {
		if i < len(a.Pods) && pods[a.Pods[i]].Name != want {
			t.Errorf("arrival %d = %s, want %s", i, pods[a.Pods[i]].Name, want)
		}
	}
	seen := make([]bool, len(nodes))
	for _, r := range a.Ranks {
		if r < 0 || r >= len(nodes) || seen[r] {
			t.Fatalf("ranks are not a permutation: %d", r)
		}
		seen[r] = true
	}
}
