package score_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/score"
	"github.com/allot-dev/allot/internal/sim/frag"
	"github.com/allot-dev/allot/internal/trace/openb"
)

func TestZZDiag(t *testing.T) {
	pol := os.Getenv("XDIAG")
	if pol == "" {
		t.Skip()
	}
	wl := os.Getenv("XWL")
	dir := "/work/shared/traces/openb/"
	nodesT, _ := openb.ReadNodesFile(dir + "openb_node_list_gpu_node.csv")
	pods, _ := openb.ReadPodsFile(dir + "openb_pod_list_" + wl + ".csv")
	reqs := make([]sched.Request, len(pods))
	for i, p := range pods {
		r := sched.Request{GPUs: p.GPUs, Milli: p.GPUMilli, CPU: p.CPUMilli, Memory: p.MemoryMiB, Models: p.Models}
		if p.GPUs == 0 {
			r.Milli, r.Models = 0, nil
		}
		reqs[i] = r
	}
	w := score.TargetWorkload(reqs, score.DefaultCoverage)
	for _, p := range strings.Split(pol, ",") {
		for seed := int64(42); seed < 45; seed++ {
			arr := frag.Arrivals(pods, nodesT, 1.3, seed)
			nodes := make([]*sched.NodeInfo, len(nodesT))
			var capMilli int64
			for i, n := range nodesT {
				free := make([]int64, n.GPUs)
				for g := range free {
					free[g] = model.MilliPerGPU
				}
				capMilli += int64(n.GPUs) * 1000
				nodes[i] = &sched.NodeInfo{Index: i, Rank: arr.Ranks[i], Name: n.Name, GPUModel: n.Model, Ready: true,
					FreeMilli: free, FreeWhole: n.GPUs, CPUCap: n.CPUMilli, CPUFree: n.CPUMilli, MemCap: n.MemoryMiB, MemFree: n.MemoryMiB}
			}
			s, _ := score.New(p, score.WithSeed(seed), score.WithWorkload(w))
			ch := sched.Chooser{Scorer: s}
			var arrived, alloc int64
			failed := map[string]int64{}
			failedN := map[string]int{}
			fs := map[string]int{}
			for _, pi := range arr.Pods {
				r := &reqs[pi]
				arrived += r.TotalMilli()
				if 100*float64(arrived)/float64(capMilli) > 100 {
					break
				}
				if c, ok := ch.Choose(nodes, r, nil); ok {
					c.Node.Bind(r, c.GPUs)
					alloc += r.TotalMilli()
				} else {
					k := fmt.Sprintf("g%d", r.GPUs)
					if r.Fractional() {
						k = "frac"
					}
					if seed == 42 {
						fs[fmt.Sprintf("%d/%d/%d", r.GPUs, r.Milli, r.CPU/1000)]++
					}
					failed[k] += r.TotalMilli()
					failedN[k]++
				}
			}
			// free state
			var freeWholeByModel = map[string]int{}
			var freePartial, freeWhole, strandCPU int64
			for _, n := range nodes {
				for _, f := range n.FreeMilli {
					if f == 1000 {
						freeWholeByModel[n.GPUModel]++
						freeWhole += 1000
					} else {
						freePartial += f
					}
				}
				if n.CPUFree < 4000 {
					strandCPU += n.FreeMilliTotal()
				}
			}
			_ = math.Abs
			if seed == 42 {
				fmt.Println("failed shapes", fs)
				rem := map[int64]int{}
				remCPU := map[string]int64{}
				for _, n := range nodes {
					for _, f := range n.FreeMilli {
						if f < 1000 && f > 0 {
							rem[f/50*50]++
							remCPU[fmt.Sprintf("%s/cpu%d", n.GPUModel, n.CPUFree/4000*4)] += f
						}
					}
				}
				fmt.Println("remnants by 50", rem)
				fmt.Println("remnant milli by model/cpufree", remCPU)
			}
			fmt.Printf("%s seed %d alloc %.2f failed %v n %v freeWhole %d freePartial %d strandedCPU<4c %d wholeByModel %v\n", p, seed, 100*float64(alloc)/float64(capMilli), failed, failedN, freeWhole/1000, freePartial, strandCPU, freeWholeByModel)
		}
	}
}
