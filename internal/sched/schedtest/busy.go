package schedtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// BusyConfig shapes a busy world (see NewBusy).
type BusyConfig struct {
	Nodes   int     // 8-GPU nodes, as in Synthetic
	Pending int     // queued jobs at the first cycle, and kept queued after
	Fill    float64 // share of the GPUs running work holds at the first cycle
	Seed    uint64
	// Elastic is the share of the queued whole-GPU jobs outside
	// reservations that are elastic (model.Elastic): a gang of n nodes
	// runs with n to 2n, a job of one instance with 1 or 2, one instance
	// at a time. Drawn apart from the rest, so the jobs are those of a
	// world without it, 0 included.
	Elastic float64
}

// Busy is the fleet of Synthetic filled with running work, with a queue in
// front of it, driven cycle by cycle as the simulators drive the core:
// Step completes some running work and lets new jobs arrive, the caller
// schedules, Apply commits the Plan.
type Busy struct {
	World *World
	Now   time.Time
	cfg   BusyConfig
	rng   *rand.Rand
	erng  *rand.Rand // draws which jobs are elastic; nil without any
	next  int        // jobs made so far, for IDs
	owner map[string]model.Reservation
	// Done holds the jobs the last Step completed, for a driver that
	// reports changes to a sched.Session.
	Done []*model.Job
}

// busyReservations is how many reservations the world holds, each of
// Nodes/400 nodes (at least one), owned by the first tenants.
const busyReservations = 4

// NewBusy builds the fleet of Synthetic (Nodes nodes, three regions, H100
// and A100 leaf groups, twenty tenants in a guaranteed-H100, a
// guaranteed-A100 and an unguaranteed partition) plus four open reservations,
// then fills it to Fill with running work of every class, partition and
// shape (borrowers included, reservation owners inside their reservations),
// placed by the core itself (preemption off), with start and checkpoint
// times spread over the last three days, and queues Pending jobs of the mix
// that newJob draws. The world is ready for its first cycle at Now.
func NewBusy(cfg BusyConfig) (*Busy, error) {
	if cfg.Nodes < 1 || cfg.Pending < 0 || cfg.Fill < 0 || cfg.Fill > 1 || !(cfg.Elastic >= 0 && cfg.Elastic <= 1) {
		return nil, fmt.Errorf("busy world: need nodes ≥ 1, pending ≥ 0, 0 ≤ fill ≤ 1 and 0 ≤ elastic ≤ 1")
	}
	w := Synthetic(cfg.Nodes, 0, cfg.Seed)
	b := &Busy{World: w, Now: Epoch, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 7)), owner: map[string]model.Reservation{}}
	size := max(1, cfg.Nodes/400)
	for i := range busyReservations {
		sku := []string{"ND96-H100x8-IB", "ND96-A100x8-IB"}[i%2]
		r := model.Reservation{Name: fmt.Sprintf("res%d", i), Owner: fmt.Sprintf("tenant%02d", i), SKU: sku,
			Region: fmt.Sprintf("r%d", i%3), Count: size}
		w.Tenancy.Reservations = append(w.Tenancy.Reservations, r)
		b.owner[r.Owner] = r
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if cfg.Elastic > 0 {
		b.erng = rand.New(rand.NewPCG(cfg.Seed, 11))
	}
	b.fill()
	for i := range cfg.Pending {
		b.newJob(false).Submitted(b.Now.Add(-time.Duration(cfg.Pending-i) * time.Second))
	}
	return b, nil
}

// fill places running work with the core until Fill of the GPUs is held,
// then drops what stayed queued and spreads start and checkpoint times.
func (b *Busy) fill() {
	w := b.World
	total := int64(len(w.Fleet.Nodes)) * 8 * model.MilliPerGPU
	target := int64(b.cfg.Fill * float64(total))
	s := sched.New(sched.Config{DisablePreemption: true})
	for round := 0; round < 8; round++ {
		held := heldMilli(w.Jobs)
		if held >= target-total/1000 {
			break
		}
		for want := target - held; want > 0; {
			j := b.newJob(true).Job
			want -= int64(j.Spec.Resources.InstanceCount) * RequestMilli(j.Spec.Resources)
		}
		p := s.Schedule(w.Snapshot(), b.Now)
		if err := p.Apply(w.Jobs, b.Now); err != nil {
			panic(err) // the core's own plan on the world it was given
		}
		w.Jobs = slices.DeleteFunc(w.Jobs, func(j *model.Job) bool { return j.Status.State == model.StateQueued })
		if heldMilli(w.Jobs) == held {
			break // nothing more fits the mix
		}
	}
	for _, j := range w.Jobs {
		age := time.Duration(b.rng.Int64N(int64(72 * time.Hour)))
		j.Status.StartedAt = b.Now.Add(-age)
		j.Status.SubmittedAt = j.Status.StartedAt.Add(-time.Minute)
		if b.rng.IntN(10) < 7 {
			j.Status.LastCheckpoint = j.Status.StartedAt.Add(time.Duration(b.rng.Int64N(int64(age) + 1)))
		}
	}
}

// RequestMilli is the milli-GPU one instance of r takes.
func RequestMilli(r model.Resources) int64 {
	if r.Fractional() {
		return r.GPUMilli
	}
	return int64(r.GPUsPerInstance) * model.MilliPerGPU
}

func heldMilli(jobs []*model.Job) int64 {
	var m int64
	for _, j := range jobs {
		for _, a := range j.Status.Allocations {
			m += a.GPUMilli * int64(len(a.GPUs))
		}
	}
	return m
}

// Held is the share of the fleet's GPUs that running work holds.
func (b *Busy) Held() float64 {
	return float64(heldMilli(b.World.Jobs)) / float64(int64(len(b.World.Fleet.Nodes))*8*model.MilliPerGPU)
}

// GangSizes are the instance counts a multi-node gang draws, 64 the most
// often: the largest training runs are the ones a busy fleet keeps waiting.
var GangSizes = []int{2, 4, 8, 16, 32, 64, 64, 64}

// newJob adds a job of the realistic mix to the queue: 30 % one GPU
// (inference), 20 % a fraction of one GPU, 10 % two or four GPUs, 25 %
// eight GPUs on one node (training), 5 % a reservation owner's one to eight
// GPUs inside its reservation, 4 % (1 % while filling) multi-node gangs of
// GangSizes × 8 GPUs on InfiniBand; a quarter of the non-reservation work is
// spot, a tenth reserved class, the rest standard; half names a GPU model.
// With BusyConfig.Elastic, that share of the queued whole-GPU jobs outside
// reservations is elastic.
func (b *Busy) newJob(filling bool) *JobBuilder {
	rng := b.rng
	b.next++
	tenant := fmt.Sprintf("tenant%02d", rng.IntN(20))
	j := b.World.Job(fmt.Sprintf("b%07d", b.next), tenant).Submitted(b.Now)
	gangs := 4
	if filling {
		gangs = 1
	}
	k := rng.IntN(100)
	switch {
	case k < 30:
		j.GPUs(1, 1)
	case k < 50:
		j.Milli(int64(100 * (1 + rng.IntN(9))))
	case k < 60:
		j.GPUs(1, []int{2, 4}[rng.IntN(2)])
	case k < 85:
		j.GPUs(1, 8)
	case k < 90:
		r := b.owner[fmt.Sprintf("tenant%02d", rng.IntN(busyReservations))]
		j.Job.Spec.Tenant = r.Owner
		j.GPUs(1, []int{1, 2, 4, 8}[rng.IntN(4)]).Reservation(r.Name).Models(b.World.Fleet.Catalog[r.SKU].GPUModel)
		j.CPU(int64(1000*(1+rng.IntN(8))), int64(4096*(1+rng.IntN(8))))
		return j
	case k < 90+gangs:
		j.GPUs(GangSizes[rng.IntN(len(GangSizes))], 8).Interconnect(model.FabricInfiniBand)
	default:
		j.GPUs(1, 1)
	}
	if res := j.Job.Spec.Resources; !filling && !res.Fractional() && b.erng != nil && b.erng.Float64() < b.cfg.Elastic {
		n := res.InstanceCount
		j.Job.Spec.Elastic = &model.Elastic{MinInstances: n, MaxInstances: 2 * n, Step: 1}
	}
	j.CPU(int64(1000*(1+rng.IntN(8))), int64(4096*(1+rng.IntN(8))))
	switch rng.IntN(4) {
	case 0:
		j.Models("H100")
	case 1:
		j.Models("A100")
	}
	switch c := rng.IntN(20); {
	case c < 5:
		j.Class(model.ClassSpot)
	case c < 7:
		j.Class(model.ClassReserved)
	}
	return j
}

// Step moves the clock a minute on, completes 1 % of the running work
// (drawn at random) and lets new jobs arrive until Pending are queued. It
// returns how many completed and how many arrived.
func (b *Busy) Step() (completed, arrived int) {
	w := b.World
	b.Now = b.Now.Add(time.Minute)
	var running []int
	queued := 0
	for i, j := range w.Jobs {
		switch {
		case j.Status.State.Holds():
			running = append(running, i)
		case j.Status.State == model.StateQueued:
			queued++
		}
	}
	done := map[int]bool{}
	for n := (len(running) + 99) / 100; len(done) < n; {
		done[running[b.rng.IntN(len(running))]] = true
	}
	k := 0
	b.Done = b.Done[:0]
	for i, j := range w.Jobs {
		if !done[i] {
			w.Jobs[k] = j
			k++
		} else {
			b.Done = append(b.Done, j)
		}
	}
	clear(w.Jobs[k:])
	w.Jobs = w.Jobs[:k]
	for ; queued < b.cfg.Pending; queued++ {
		b.newJob(false)
		arrived++
	}
	return len(done), arrived
}

// Apply commits a Plan the core made for the world at Now.
func (b *Busy) Apply(p sched.Plan) error { return p.Apply(b.World.Jobs, b.Now) }
