package sched

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Exposure is what may preempt a running job, in a person's words: the
// rules of evictable (preempt.go) read from the victim's side, for 'job
// why' on a running job.
type Exposure struct {
	// ProtectedUntil is when its protection (Config.MinRunTime) ends;
	// zero when it is not protected at now. Spot work is not protected
	// from a partition reclaiming its guarantee, nor borrowing work from
	// what was queued before it started (By says so; reclaims).
	ProtectedUntil time.Time
	// By lists the work that may preempt it once unprotected; empty when
	// nothing may.
	By []string
}

// Exposure returns what may preempt job id, which holds capacity in snap,
// at now; ok is false when it holds none there. Like Schedule it is pure.
func (s *Scheduler) Exposure(snap *Snapshot, now time.Time, id string) (e Exposure, ok bool) {
	st := newState(snap, now, s.cfg)
	var rj *running
	for _, r := range st.running {
		if r.job.ID == id {
			rj = r
		}
	}
	if rj == nil {
		return Exposure{}, false
	}
	if until := st.protectedUntil(rj); until.After(now) {
		e.ProtectedUntil = until
	}
	if st.cfg.PriorityGap > 0 && !(rj.onReserved && !st.inOwnReservation(rj)) {
		e.By = append(e.By, fmt.Sprintf("its own tenant's %s work of a priority at least %d higher", rj.class, st.cfg.PriorityGap))
	}
	if rj.onReserved {
		if st.inOwnReservation(rj) {
			e.By = append(e.By, "its own tenant's work that names the reservation it runs in (nothing else: it runs on capacity bought for its tenant)")
			return e, true
		}
		e.By = append(e.By, "the work of the tenant whose reservation holds one of its nodes")
	}
	if rj.cpuOnGPU {
		e.By = append(e.By, "any standard or reserved work that needs the GPUs of its nodes (it is CPU-only work on GPU nodes: GPUWorkFirst)")
		return e, true
	}
	q, k := rj.tenant.partition, rj.pool
	higher := higherClasses(rj.class)
	switch {
	case higher == "":
	case rj.class == model.ClassSpot:
		e.By = append(e.By, fmt.Sprintf("%s work of any tenant that needs its GPUs", higher))
	case q == nil:
		e.By = append(e.By, fmt.Sprintf("%s work of any tenant (its tenant has no partition: all it runs on is borrowed)", higher))
	case q.used[k] > q.guar[k]:
		e.By = append(e.By, fmt.Sprintf("%s work of any tenant (partition %s holds %s of its %s guaranteed %s in %s: it runs on borrowed capacity)",
			higher, q.name, gpuText(q.used[k]), gpuText(q.guar[k]), st.pools[k].gpuModel, st.pools[k].region))
	default:
		e.By = append(e.By, fmt.Sprintf("%s work of its own partition %s only (it runs within the partition's guarantee of %s %s in %s)",
			higher, q.name, gpuText(q.guar[k]), st.pools[k].gpuModel, st.pools[k].region))
	}
	switch {
	case rj.class == model.ClassSpot: // reclaims: not protected from that
		e.By = append(e.By, "a partition below its guarantee there, reclaiming what it is owed, protected or not")
	case q == nil || q.used[k] > q.guar[k]:
		e.By = append(e.By, "a partition below its guarantee there, reclaiming what it is owed (while it is protected, only for work queued before it started)")
	}
	return e, true
}

// higherClasses names the classes above c ("standard or reserved"), empty
// for the top one.
func higherClasses(c model.Class) string {
	s := ""
	for h := c + 1; h <= model.ClassReserved; h++ {
		if s != "" {
			s += " or "
		}
		s += h.String()
	}
	return s
}

func gpuText(milli int64) string {
	if milli%model.MilliPerGPU == 0 {
		return fmt.Sprintf("%d GPUs", milli/model.MilliPerGPU)
	}
	return fmt.Sprintf("%.2f GPUs", float64(milli)/model.MilliPerGPU)
}
