package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	listersschedv1 "k8s.io/client-go/listers/scheduling/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/strategy"
)

// Config configures a Controller.
type Config struct {
	Client kubernetes.Interface
	// Dynamic, when set, reads the scheduler-plugins PodGroups (their
	// spec.minMember sizes a gang) where the API server serves them.
	Dynamic dynamic.Interface
	// SchedulerName is the spec.schedulerName of the pods the controller
	// schedules; empty means SchedulerName ("allot").
	SchedulerName string
	// Tenants is the tenants file (its name and content): partitions,
	// tenants, quotas and reservations, read against the fleet the Nodes
	// make (again whenever that fleet changes shape).
	TenantsName string
	Tenants     []byte
	// Store, when set, adds what allot's store holds to the tenants file
	// as the server does: reservations created through the API and
	// approved quotas (server.StoredTenancy).
	Store store.Store
	// Sched configures the core, as the server's --min-run-time and
	// friends do.
	Sched sched.Config
	// Tick is the interval of cycles when nothing happens (default 1s).
	Tick time.Duration
	// Binders is how many binds run at once (default 16).
	Binders int
	Log     *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Controller schedules allot's pods on the Nodes of one Kubernetes
// cluster with allot's core.
type Controller struct {
	cfg     Config
	factory informers.SharedInformerFactory
	nodes   listerscorev1.NodeLister
	pods    listerscorev1.PodLister
	nss     listerscorev1.NamespaceLister
	pcs     listersschedv1.PriorityClassLister
	// podGroups lists the scheduler-plugins PodGroups; nil where none
	// are served (podgroup.go).
	podGroups cache.GenericLister
	synced    []cache.InformerSynced
	rec       record.EventRecorder
	bcast     record.EventBroadcaster
	kick      chan struct{}

	// Counters, for tests and metrics.
	binds, deletes, cycles, conflicts atomic.Int64
	// OnBind, when set (tests), is told of every bind the controller
	// makes, after the API accepted it.
	OnBind func(pod string, node string)

	// Only the cycle's goroutine touches the fields below until mu.

	inc        *sched.Incremental
	fleetShape string
	tenancy    *model.Tenancy // the tenants file read against the fleet of fleetShape
	tenancyErr error
	// waiting holds, by job ID, the pods evicted for a job: it is bound
	// once they are gone, not before (their GPUs are theirs until they
	// exit). Each cycle adds those the informer shows leaving with
	// AnnotationEvictedFor, so a restarted controller knows them too.
	waiting map[string][]string

	// mu guards assumed and why.
	mu sync.Mutex
	// assumed holds the pods bound by this controller that its informer
	// has not shown bound yet, by UID: the next cycle counts them as bound.
	assumed map[types.UID]assumption
	// why is what the last cycle knew of each job and pod (why.go).
	why whyIndex
}

// assumption is a bind not yet seen through the informer.
type assumption struct {
	b  bound
	at time.Time
}

// assumeFor is how long a bind waits to be seen before it is forgotten.
const assumeFor = time.Minute

// New returns a Controller; Run starts it.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errors.New("kube: no client")
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = SchedulerName
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Binders <= 0 {
		cfg.Binders = 16
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Controller{cfg: cfg, kick: make(chan struct{}, 1), waiting: map[string][]string{},
		assumed: map[types.UID]assumption{}, inc: sched.NewIncremental(sched.New(cfg.Sched), false)}
	c.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	ni := c.factory.Core().V1().Nodes()
	pi := c.factory.Core().V1().Pods()
	nsi := c.factory.Core().V1().Namespaces()
	pci := c.factory.Scheduling().V1().PriorityClasses()
	c.nodes, c.pods, c.nss, c.pcs = ni.Lister(), pi.Lister(), nsi.Lister(), pci.Lister()
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.Kick() },
		UpdateFunc: func(any, any) { c.Kick() },
		DeleteFunc: func(any) { c.Kick() },
	}
	for _, inf := range []cache.SharedIndexInformer{ni.Informer(), pi.Informer(), nsi.Informer(), pci.Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, fmt.Errorf("kube: watch: %w", err)
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	c.bcast = record.NewBroadcaster()
	c.rec = c.bcast.NewRecorder(scheme.Scheme, corev1.EventSource{Component: cfg.SchedulerName})
	return c, nil
}

// Kick asks for a cycle soon.
func (c *Controller) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Binds is how many pods the controller bound; Deletes how many it
// evicted.
func (c *Controller) Binds() int64   { return c.binds.Load() }
func (c *Controller) Deletes() int64 { return c.deletes.Load() }
func (c *Controller) Cycles() int64  { return c.cycles.Load() }

// BindConflicts is how many of its binds the API server refused as a
// conflict: the pod was bound already (by an earlier life of this
// controller, or another scheduler).
func (c *Controller) BindConflicts() int64 { return c.conflicts.Load() }

// Start starts the informers and the event sink and waits until the
// informers hold the API server's state. It runs until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	c.bcast.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.cfg.Client.CoreV1().Events("")})
	context.AfterFunc(ctx, c.bcast.Shutdown)
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("kube: informers did not sync: %w", ctx.Err())
	}
	return c.startPodGroups(ctx)
}

// Schedule runs cycles until ctx ends: on every change the informers see
// (after a short pause that lets a burst of changes settle) and every
// Tick. Call it after Start, only where this controller leads.
func (c *Controller) Schedule(ctx context.Context) {
	// A leader starts from the informers alone: what another leader or
	// an earlier life assumed or waited for is not known here.
	c.mu.Lock()
	c.assumed = map[types.UID]assumption{}
	c.mu.Unlock()
	c.waiting = map[string][]string{}
	c.inc.Drop()
	t := time.NewTicker(c.cfg.Tick)
	defer t.Stop()
	for {
		if err := c.Cycle(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Log.Error("scheduling cycle failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			select { // let a burst of events settle
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		case <-t.C:
		}
	}
}

// Cycle runs one scheduling cycle:
//
//  1. snapshot the informers: Nodes become the fleet, allot's pods the
//     core's jobs (work.go), with the binds this controller made that
//     the informers have not shown yet;
//  2. read the tenancy: the tenants file against this fleet, with what
//     the store adds;
//  3. finish the gangs a stopped controller bound in part (or, where a
//     node they were to go to is gone, evict the part bound);
//  4. plan: the fleet's strategy, then the core, on a Session told only
//     what changed (sched.Incremental), exactly as the server plans;
//  5. commit: evict the victims (pod deletions with their grace), bind
//     (Binding subresources, a gang whole), and write every pending
//     pod's reason as its PodScheduled condition and an Event.
func (c *Controller) Cycle(ctx context.Context) error {
	c.cycles.Add(1)
	now := c.cfg.Now()
	// 1. Snapshot.
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	fleet, nodeProblems := buildFleet(nodes)
	for name, err := range nodeProblems {
		c.cfg.Log.Warn("node left out of the fleet", "node", name, "err", err)
	}
	all, err := c.pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	pods := all[:0:0]
	for _, p := range all {
		if p.Spec.SchedulerName == c.cfg.SchedulerName {
			pods = append(pods, p)
		}
	}
	c.forgetSeen(pods, now)
	// Pods on their way out for another job, as they say: after a restart
	// too, that job waits for them rather than being planned again.
	for _, p := range pods {
		if f := p.Annotations[AnnotationEvictedFor]; f != "" && p.DeletionTimestamp != nil && !slices.Contains(c.waiting[f], podKey(p)) {
			c.waiting[f] = append(c.waiting[f], podKey(p))
		}
	}
	works := assemble(pods, c.tenantOf, lookups{class: c.classOf, groupSize: c.groupSize}, fleet, c.assumedBind)

	// 2. Tenancy.
	ten, err := c.readTenancy(ctx, fleet)
	if err != nil {
		c.publish(works, nil, now)
		return err
	}

	// 3. Finish gangs bound in part.
	byID := map[string]*work{}
	for _, w := range works {
		byID[w.id] = w
		if len(w.finish) > 0 {
			c.finish(ctx, w)
		}
		if w.broken {
			c.evict(ctx, w, sched.Preemption{Job: w.id, For: w.id, Detail: w.why})
		}
	}

	// Jobs whose victims are still exiting wait out of the queue.
	jobs := make([]*model.Job, 0, len(works))
	for _, w := range works {
		if w.job == nil {
			continue
		}
		if w.job.Status.State == model.StateQueued {
			if left := c.stillWaiting(w.id, byID); len(left) > 0 {
				w.reason = sched.AwaitingPreemption.String()
				w.why = fmt.Sprintf("evicted %s for it; it is bound once they exit", strings.Join(left, ", "))
				continue
			}
		}
		jobs = append(jobs, w.job)
	}

	// 4. Plan.
	in := strategy.Apply(&sched.Snapshot{Fleet: fleet, Tenancy: ten, Jobs: jobs}, now)
	plan, err := c.inc.Plan(in, now)
	if err != nil {
		c.inc.Drop()
		return fmt.Errorf("plan: %w", err)
	}

	// 5. Commit.
	evicted := map[string][]string{}
	for _, p := range plan.Preemptions {
		w := byID[p.Job]
		if w == nil {
			continue
		}
		names := c.evict(ctx, w, p)
		evicted[p.For] = append(evicted[p.For], names...)
	}
	for id, names := range evicted {
		for _, n := range names {
			if !slices.Contains(c.waiting[id], n) {
				c.waiting[id] = append(c.waiting[id], n)
			}
		}
	}
	pending := map[string]sched.Pending{}
	for _, p := range plan.Pending {
		pending[p.Job] = p
	}
	var binds []sched.Bind
	for _, b := range plan.Binds {
		if len(evicted[b.Job]) > 0 {
			pending[b.Job] = sched.Pending{Job: b.Job, Reason: sched.AwaitingPreemption,
				Detail: fmt.Sprintf("evicted %s for it; it is bound once they exit", strings.Join(evicted[b.Job], ", "))}
			continue
		}
		binds = append(binds, b)
	}
	c.bind(ctx, binds, byID)
	c.explain(ctx, works, pending)
	c.publish(works, pending, now)
	return nil
}

// readTenancy returns the tenants file read against fleet (read again
// only when the fleet's shape changed) with the store's additions.
func (c *Controller) readTenancy(ctx context.Context, fleet *model.Fleet) (*model.Tenancy, error) {
	shape := fleetShape(fleet)
	if shape != c.fleetShape || (c.tenancy == nil && c.tenancyErr == nil) {
		c.fleetShape = shape
		c.tenancy, c.tenancyErr = spec.ParseTenancy(c.cfg.TenantsName, c.cfg.Tenants, fleet)
		if c.tenancyErr != nil {
			c.cfg.Log.Error("tenants file does not fit the cluster's nodes", "file", c.cfg.TenantsName, "err", c.tenancyErr)
		}
	}
	if c.tenancyErr != nil {
		return nil, fmt.Errorf("tenants %s: %w", c.cfg.TenantsName, c.tenancyErr)
	}
	if c.cfg.Store == nil {
		return c.tenancy, nil
	}
	return server.StoredTenancy(ctx, c.cfg.Store, fleet, c.tenancy)
}

// fleetShape is what the tenants file is checked against: regions,
// clusters and SKUs, and how many GPUs of each model each region has
// (percentage guarantees).
func fleetShape(f *model.Fleet) string {
	var b strings.Builder
	for _, r := range f.Regions {
		fmt.Fprintf(&b, "%s/%s[", r.Name, r.Residency)
		for _, cl := range r.Clusters {
			fmt.Fprintf(&b, "%s:%s,", cl.Name, cl.Fabric)
		}
		b.WriteString("]")
	}
	for _, n := range f.Catalog.Names() {
		s := f.Catalog[n]
		fmt.Fprintf(&b, "%s:%s:%s:%d;", n, s.Series, s.GPUModel, s.GPUs)
	}
	counts := map[string]int{}
	for _, n := range f.Nodes {
		counts[n.Region+"/"+f.Catalog[n.SKU].GPUModel] += f.Catalog[n.SKU].GPUs
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d;", k, counts[k])
	}
	return b.String()
}

// tenantOf reads the tenant of a namespace's pods.
func (c *Controller) tenantOf(ns string) (string, error) {
	n, err := c.nss.Get(ns)
	if apierrors.IsNotFound(err) {
		return ns, nil
	}
	if err != nil {
		return "", err
	}
	return tenantOf(n, ns)
}

// classOf reads a PriorityClass's AnnotationClass.
func (c *Controller) classOf(name string) (model.Priority, bool, error) {
	pc, err := c.pcs.Get(name)
	if apierrors.IsNotFound(err) {
		return model.Priority{}, false, nil
	}
	if err != nil {
		return model.Priority{}, false, err
	}
	return priorityClassOf(pc)
}

// priorityClassOf reads AnnotationClass of a PriorityClass.
func priorityClassOf(pc *schedulingv1.PriorityClass) (model.Priority, bool, error) {
	v, ok := pc.Annotations[AnnotationClass]
	if !ok {
		return model.Priority{}, false, nil
	}
	p, err := parsePriority(v)
	if err != nil {
		return p, false, fmt.Errorf("PriorityClass %s: annotations[%s]: %w", pc.Name, AnnotationClass, err)
	}
	return p, true, nil
}

// assumedBind is the bind of p this controller made and the informer
// has not shown yet.
func (c *Controller) assumedBind(p *corev1.Pod) (bound, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.assumed[p.UID]
	return a.b, ok
}

// forgetSeen drops the assumptions the informer now shows (bound pods),
// those of pods gone, and those older than assumeFor (a bind the API
// refused after all is retried from scratch).
func (c *Controller) forgetSeen(pods []*corev1.Pod, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.assumed) == 0 {
		return
	}
	live := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		live[p.UID] = p.Spec.NodeName == ""
	}
	for uid, a := range c.assumed {
		if unbound, ok := live[uid]; !ok || !unbound || now.Sub(a.at) > assumeFor {
			delete(c.assumed, uid)
		}
	}
}

// stillWaiting returns the pods evicted for job id that still exist.
func (c *Controller) stillWaiting(id string, byID map[string]*work) []string {
	names := c.waiting[id]
	if len(names) == 0 {
		return nil
	}
	var left []string
	for _, n := range names {
		ns, name, _ := strings.Cut(n, "/")
		if _, err := c.pods.Pods(ns).Get(name); err == nil {
			left = append(left, n)
		}
	}
	if len(left) == 0 {
		delete(c.waiting, id)
	} else {
		c.waiting[id] = left
	}
	return left
}

// evict deletes the pods of a victim with their own grace and says why
// in an Event; it returns the pods it asked to go.
func (c *Controller) evict(ctx context.Context, w *work, p sched.Preemption) []string {
	var names []string
	for _, pod := range w.pods {
		if pod.Spec.NodeName == "" && !c.isAssumed(pod) {
			continue
		}
		names = append(names, podKey(pod))
		if pod.DeletionTimestamp != nil {
			continue // already on its way out
		}
		grace := w.req.grace
		uid := pod.UID
		if p.Reason != sched.ReasonNone {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationEvictedFor: p.For}}})
			if _, err := c.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				c.cfg.Log.Warn("mark evicted pod", "pod", podKey(pod), "err", err)
			}
		}
		err := c.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteOptions(grace, uid))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			c.cfg.Log.Error("evict pod", "pod", podKey(pod), "err", err)
			continue
		}
		c.deletes.Add(1)
		if p.Reason == sched.ReasonNone { // a gang broken by a lost node
			c.rec.Eventf(pod, corev1.EventTypeWarning, ReasonNodeLost, "evicted (grace %ds): %s", grace, p.Detail)
		} else {
			c.rec.Eventf(pod, corev1.EventTypeNormal, "Preempted", "%s: evicted for %s (grace %ds): %s", p.Reason, p.For, grace, p.Detail)
		}
		c.cfg.Log.Info("evicted pod", "pod", podKey(pod), "for", p.For, "reason", p.Reason.String(), "detail", p.Detail, "grace_s", grace)
	}
	return names
}

func (c *Controller) isAssumed(p *corev1.Pod) bool {
	_, ok := c.assumedBind(p)
	return ok
}
