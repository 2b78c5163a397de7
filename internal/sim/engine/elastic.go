package engine

import (
	"math"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Elastic jobs (model.Elastic) change size while they run: the core's Plan
// resizes them (sched.Resize). The engine treats a resize as the restart
// TorchElastic makes on a change of membership: the attempt ends, its work
// since the last checkpoint is lost on every instance, and the next
// attempt resumes from that checkpoint at the new size's speed.

// DefaultScalingEfficiency is the share of a doubling of data-parallel
// instances that turns into speed: 0.9, so a job grown to twice its base
// size runs 1.8 times as fast. Horovod's benchmark (horovod/horovod,
// docs/benchmarks.rst: 128 servers of 4 Pascal GPUs on 25 Gbit/s RoCE)
// reports 90 % scaling efficiency for Inception V3 and ResNet-101 and
// 68 % for VGG-16 over all nine doublings to 512 GPUs; 0.9 for each
// doubling is the conservative reading (docs/serving-model.md, "Elastic
// training").
const DefaultScalingEfficiency = 0.9

// Scaling is how many times as fast a data-parallel job runs on n
// instances as on base, keeping eff of each doubling:
// (n/base) × eff^log2(n/base). 1 at the base size; at 2 × base, 2 × eff.
func Scaling(eff float64, n, base int) float64 {
	if n == base || n <= 0 || base <= 0 {
		return 1
	}
	r := float64(n) / float64(base)
	return r * math.Pow(eff, math.Log2(r))
}

// speed is the work per second of the clock of j's attempt on its
// allocations: Config.Speed (1 when nil or not positive), times Scaling
// from its base size (Resources.InstanceCount) to the instances it holds.
func (e *Engine) speed(j *model.Job) float64 {
	s := 1.0
	if e.cfg.Speed != nil {
		if v := e.cfg.Speed(j); v > 0 {
			s = v
		}
	}
	return s * Scaling(e.cfg.ScalingEfficiency, len(j.Status.Allocations), j.Spec.Resources.InstanceCount)
}

// resized restarts x's work at its new size from its last checkpoint.
// Apply has ended the attempt (it started at the previous attempt's
// start) and started the next at now; the first instance keeps its node,
// so a local checkpoint stays at hand.
func (e *Engine) resized(x *entry, r sched.Resize) {
	x.gen++
	st := &x.job.Status
	if n := len(st.Attempts); n >= 2 {
		e.keep(x, st.Attempts[n-2].Started, firstNode(x.job, 2))
	}
	e.resume(x, false)
	if rr, ok := e.cfg.Recorder.(ResizeRecorder); ok {
		rr.Resized(x.job, r, e.now)
	}
	e.runAttempt(x)
}

// wakeForGrowth asks for a cycle when the resize interval
// (Config.Core.ResizeInterval) of the first running elastic job below its
// maximum ends: the core grows a job only after it, and with nothing else
// happening no cycle would come. A job whose interval has ended waits for
// the next change, which brings a cycle anyway.
func (e *Engine) wakeForGrowth() {
	e.grow = time.Time{}
	iv := e.cfg.Core.ResizeInterval
	if iv <= 0 {
		iv = model.DefaultResizeInterval
	}
	for x := range e.elastic {
		j := x.job
		if j.Status.State != model.StateRunning || len(j.Status.Allocations) >= j.Spec.Elastic.MaxInstances {
			continue
		}
		if t := j.Status.StartedAt.Add(iv); t.After(e.now) && (e.grow.IsZero() || t.Before(e.grow)) {
			e.grow = t
		}
	}
}
