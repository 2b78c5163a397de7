package schedtest

import (
	"sort"

	"github.com/allot-dev/allot/internal/model"
)

// ranked is a node a reservation may take, with its tier and cost under
// the rule package sched documents; a list of them comes best first.
type ranked struct {
	name string
	tier int
	cost float64
}

// fewClusters is which count of cands (best first) a reservation takes,
// by the rule package sched documents: from as few clusters as it can,
// each round the cluster that gives the most of the nodes still needed,
// then the one whose picks hold the most nodes of tier 0, the lowest sum
// of tiers, the lowest sum of costs, and the best first candidate; from
// each cluster its best nodes.
func fewClusters(fleet *model.Fleet, cands []ranked, count int) []string {
	clusterOf := map[string]string{}
	for _, n := range fleet.Nodes {
		clusterOf[n.Name] = n.Cluster
	}
	taken := map[string]bool{}
	var out []string
	for need := min(count, len(cands)); need > 0; {
		type offer struct {
			nodes        []string
			tier0, tiers int
			cost         float64
			first        int
		}
		byCluster := map[string]*offer{}
		var offers []*offer
		for i, c := range cands {
			if taken[c.name] {
				continue
			}
			o := byCluster[clusterOf[c.name]]
			if o == nil {
				o = &offer{first: i}
				byCluster[clusterOf[c.name]] = o
				offers = append(offers, o)
			}
			if len(o.nodes) == need {
				continue
			}
			o.nodes = append(o.nodes, c.name)
			o.tiers += c.tier
			o.cost += c.cost
			if c.tier == 0 {
				o.tier0++
			}
		}
		sort.SliceStable(offers, func(a, b int) bool {
			x, y := offers[a], offers[b]
			switch {
			case len(x.nodes) != len(y.nodes):
				return len(x.nodes) > len(y.nodes)
			case x.tier0 != y.tier0:
				return x.tier0 > y.tier0
			case x.tiers != y.tiers:
				return x.tiers < y.tiers
			case x.cost != y.cost:
				return x.cost < y.cost
			}
			return x.first < y.first
		})
		for _, name := range offers[0].nodes {
			taken[name] = true
			out = append(out, name)
		}
		need -= len(offers[0].nodes)
	}
	return out
}
