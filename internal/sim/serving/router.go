package serving

// Router sends each request to the replica with the fewest requests in
// flight, ties broken from a start that moves on with every request: what
// allot's gateway does (internal/gateway, least outstanding requests).
// The zero Router is ready to use.
type Router struct {
	next int // where the search for the least loaded starts
}

// Pick is the replica of reps (at least one) with the fewest requests in
// flight at at. Calls must come in arrival order.
func (r *Router) Pick(reps []*Replica, at float64) *Replica {
	n := len(reps)
	if r.next++; r.next >= n { // modulo n, dividing only at the wrap (n may have shrunk since)
		r.next %= n
	}
	best, load := -1, 0
	// From r.next round to it, k wrapping to 0 at n rather than taken
	// modulo n: Pick runs for every simulated request.
	for i, k := 0, r.next; i < n; i, k = i+1, k+1 {
		if k == n {
			k = 0
		}
		rep := reps[k]
		l := len(rep.batch)
		if l > 0 && rep.batch[0].leaves <= at { // InFlight's retire, called only when there is something to retire
			l = rep.InFlight(at)
		}
		if best < 0 || l < load {
			best, load = k, l
			if l == 0 {
				break // none has fewer: the first idle one in the order
			}
		}
	}
	return reps[best]
}
