package sched

// Scorer rates placing one instance on one node; higher is better. It is
// called only for nodes where the instance fits. Scores are compared across
// nodes of one decision, after the Chooser added the image-locality term
// (ImageLocalityWeight, images.go); ties go to the node of lower Rank. A
// scheduling cycle treats idle nodes of one SKU in one cluster as
// interchangeable (but for the images they hold), so a Scorer used there
// must rate them alike (a function of the node's SKU, place and free
// capacity, not of its name or rank).
type Scorer interface {
	Name() string
	Score(n *NodeInfo, r *Request) float64
}

// GPUChooser is implemented by scorers that also choose which GPUs of the
// chosen node an instance takes. Others get NodeInfo.PickGPUs.
type GPUChooser interface {
	ChooseGPUs(n *NodeInfo, r *Request, dst []int) []int
}

// Normalizer is implemented by scorers whose raw scores are rescaled across
// all feasible nodes of one decision before the best is chosen (min-max
// scaling, say). Normalize rewrites scores in place.
type Normalizer interface {
	Normalize(scores []float64)
}

// Choice is the outcome of choosing a node for one instance.
type Choice struct {
	Node  *NodeInfo
	GPUs  []int
	Score float64
}

// Chooser picks nodes for instances with one scorer. It keeps scratch space
// between calls, so one Chooser serves one goroutine.
type Chooser struct {
	Scorer Scorer
	cand   []*NodeInfo
	scores []float64
}

// Choose returns the best node among nodes for r, or ok=false when r fits
// none of them. filter, when not nil, must also accept the node.
func (c *Chooser) Choose(nodes []*NodeInfo, r *Request, filter func(*NodeInfo) bool) (Choice, bool) {
	c.cand, c.scores = c.cand[:0], c.scores[:0]
	for _, n := range nodes {
		if !n.Fits(r) || (filter != nil && !filter(n)) {
			continue
		}
		c.cand = append(c.cand, n)
		c.scores = append(c.scores, c.Scorer.Score(n, r))
	}
	if len(c.cand) == 0 {
		return Choice{}, false
	}
	if nz, ok := c.Scorer.(Normalizer); ok {
		nz.Normalize(c.scores)
	}
	if r.Image != 0 {
		for i, n := range c.cand {
			if n.HoldsImage(r.Image) {
				c.scores[i] += ImageLocalityWeight
			}
		}
	}
	best := 0
	for i := 1; i < len(c.cand); i++ {
		if c.scores[i] > c.scores[best] || (c.scores[i] == c.scores[best] && c.cand[i].Rank < c.cand[best].Rank) {
			best = i
		}
	}
	n := c.cand[best]
	var gpus []int
	if gc, ok := c.Scorer.(GPUChooser); ok {
		gpus = gc.ChooseGPUs(n, r, nil)
	} else {
		gpus = n.PickGPUs(r, nil)
	}
	return Choice{Node: n, GPUs: gpus, Score: c.scores[best]}, true
}
