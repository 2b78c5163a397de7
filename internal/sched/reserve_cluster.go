package sched

// reserveCand is a node a reservation may take, with how much taking it
// costs: its tier (0 best) and the loss within the tier (reserve,
// earmark). Candidates come sorted best first.
type reserveCand struct {
	node int
	tier int
	cost float64
}

// inFewClusters picks count of cands, which come sorted best first, from
// as few clusters as it can, so that a gang as large as the reservation
// can run in it: a gang spans one cluster (placeGang's domain, the SKU
// fixing the GPU model). Each round takes the cluster that gives the most
// of the nodes still needed (its best ones) and, among those, the one
// whose picks hold the most nodes of tier 0 (work already inside the
// reservation stays there), then the lowest sum of tiers, then the lowest
// sum of costs, then the one holding the best candidate. The picks come
// in the order of cands. It reuses out's storage.
func (st *state) inFewClusters(cands []reserveCand, count int, out []reserveCand) []reserveCand {
	out = out[:0]
	if count >= len(cands) {
		return append(out, cands...)
	}
	taken := make([]bool, len(cands))
	for need := count; need > 0; {
		type pick struct {
			cluster      string
			take, tier0  int
			tiers, first int
			cost         float64
		}
		var best pick
		seen := map[string]bool{}
		for i, c := range cands {
			cl := st.groups[st.groupOf[c.node]].cluster
			if taken[i] || seen[cl] {
				continue
			}
			seen[cl] = true
			p := pick{cluster: cl, first: i}
			for k := i; k < len(cands) && p.take < need; k++ {
				if taken[k] || st.groups[st.groupOf[cands[k].node]].cluster != cl {
					continue
				}
				p.take++
				p.tiers += cands[k].tier
				p.cost += cands[k].cost
				if cands[k].tier == 0 {
					p.tier0++
				}
			}
			better := best.take == 0 || p.take > best.take ||
				p.take == best.take && (p.tier0 > best.tier0 ||
					p.tier0 == best.tier0 && (p.tiers < best.tiers ||
						p.tiers == best.tiers && p.cost < best.cost))
			if better { // ties keep the cluster of the better first candidate, seen first
				best = p
			}
		}
		for k, got := best.first, 0; got < best.take; k++ {
			if !taken[k] && st.groups[st.groupOf[cands[k].node]].cluster == best.cluster {
				taken[k] = true
				got++
			}
		}
		need -= best.take
	}
	for i, c := range cands {
		if taken[i] {
			out = append(out, c)
		}
	}
	return out
}
