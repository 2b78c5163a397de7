package replay

import "time"

// metrics is what a replay measures as it goes; summarise turns it into
// the Result. The engine's Recorder calls (recorder.go) feed it.
type metrics struct {
	busyInt   float64   // GPU-seconds held
	vcUsedInt []float64 // per VC
	vcBilled  []int64   // GPU-seconds the allocations held per VC (bill, cost.go)
	buckets   []float64 // GPU-seconds held per Sample bucket
	jct       []float64
	halfJCT   [2]float64 // sum over the first and the second half of the jobs in submit order
	halfJobs  [2]int
	queue     []float64
	queueGang []float64 // of the jobs of more than one node
	preempts  int
	lostGPUs  float64 // GPU-seconds
	maxOwner  []float64
	vcJCT     []float64 // sum per VC
	vcJobs    []int
	owners    []int
}

// advance moves the clock to t, integrating what is held.
func (s *sim) advance(t int64) {
	dt := t - s.now
	if dt <= 0 {
		return
	}
	s.busyInt += float64(s.busy) * float64(dt)
	for v, u := range s.vcUsed {
		s.vcUsedInt[v] += float64(u) * float64(dt)
	}
	if s.busy > 0 {
		bucket := int64(s.cfg.Sample / time.Second)
		for from := s.now; from < t; {
			b := from / bucket
			to := min(t, (b+1)*bucket)
			for int64(len(s.buckets)) <= b {
				s.buckets = append(s.buckets, 0)
			}
			s.buckets[b] += float64(s.busy) * float64(to-from)
			from = to
		}
	}
	s.now = t
}
