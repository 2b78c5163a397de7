package score_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/sim/frag"
	"github.com/allot-dev/allot/internal/trace/openb"
)

func TestZZExperiment(t *testing.T) {
	pol := os.Getenv("XPOL")
	if pol == "" {
		t.Skip()
	}
	wls := strings.Split(os.Getenv("XWL"), ",")
	if os.Getenv("XWL") == "" {
		wls = []string{"default", "cpu050", "gpushare40", "multigpu20", "gpushare20", "gpuspec05"}
	}
	dir := "/work/shared/traces/openb/"
	nodes, err := openb.ReadNodesFile(dir + "openb_node_list_gpu_node.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Split(pol, ",") {
		line := p
		for _, wl := range wls {
			pods, err := openb.ReadPodsFile(dir + "openb_pod_list_" + wl + ".csv")
			if err != nil {
				t.Fatal(err)
			}
			st := time.Now()
			res, err := frag.Run(context.Background(), frag.Config{Nodes: nodes, Pods: pods, Policy: p, Inflate: 1.3,
				Seeds: []int64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}, Points: []int{100, 130}, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			line += fmt.Sprintf(" %s=%.3f(%.1fs)", wl, res.Points[0].Median, time.Since(st).Seconds())
		}
		fmt.Println(line)
	}
}
