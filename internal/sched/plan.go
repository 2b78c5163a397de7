package sched

import "encoding/json"

// Plan is what one cycle decided. Binds and Preemptions are to be committed
// together; Pending explains every queued job that stays queued.
type Plan struct {
	Binds       []Bind       `json:"binds"`
	Preemptions []Preemption `json:"preemptions"`
	// Resizes change the number of instances of running elastic jobs
	// (model.Elastic); empty in a plan without them.
	Resizes []Resize  `json:"resizes,omitempty"`
	Pending []Pending `json:"pending"`
}

// Bind places every instance of a job: instance i runs on Nodes[i].
type Bind struct {
	Job   string      `json:"job"`
	Nodes []Placement `json:"nodes"`
}

// Placement is one instance's share of one node.
type Placement struct {
	Node     string `json:"node"`
	GPUs     []int  `json:"gpus"`
	GPUMilli int64  `json:"gpu_milli"` // per GPU
}

// Preemption evicts a running job so that another can run.
type Preemption struct {
	Job    string `json:"job"`
	For    string `json:"for"`
	Reason Reason `json:"reason"`
	Detail string `json:"detail,omitempty"`
	// LostGPUSeconds is the work since the victim's last checkpoint.
	LostGPUSeconds float64 `json:"lost_gpu_seconds"`
}

// Resize ends the current attempt of a running elastic job and starts the
// next with To instances, instance i on Nodes[i], from the job's last
// checkpoint (as TorchElastic restarts on a change of membership). The
// first min(From, To) instances keep the nodes and GPUs they hold; a grown
// job's new instances follow them, and a shrunk one gives up its last
// From-To instances (those added last).
type Resize struct {
	Job   string      `json:"job"`
	From  int         `json:"from"`
	To    int         `json:"to"`
	Nodes []Placement `json:"nodes"`
	// For is the job a shrink made room for; empty for growth.
	For string `json:"for,omitempty"`
	// Reason is IdleCapacity for growth; a shrink gives the reason a
	// preemption for For would (HigherClass, ReclaimGuarantee, ...).
	Reason Reason `json:"reason"`
	Detail string `json:"detail"`
	// LostGPUSeconds is the work since the job's last checkpoint of every
	// instance that restarts: all From of them, a resize being a new
	// attempt.
	LostGPUSeconds float64 `json:"lost_gpu_seconds"`
}

// Grows reports whether the resize adds instances.
func (r Resize) Grows() bool { return r.To > r.From }

// Pending explains why a queued job was not placed.
type Pending struct {
	Job    string `json:"job"`
	Reason Reason `json:"reason"`
	Detail string `json:"detail"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan
	q := plain(p)
	if q.Binds == nil {
		q.Binds = []Bind{}
	}
	if q.Preemptions == nil {
		q.Preemptions = []Preemption{}
	}
	if q.Pending == nil {
		q.Pending = []Pending{}
	}
	return json.Marshal(q)
}

// unbind drops the bind of job from the plan.
func (p *Plan) unbind(job string) {
	for i, b := range p.Binds {
		if b.Job == job {
			p.Binds = append(p.Binds[:i], p.Binds[i+1:]...)
			return
		}
	}
}
