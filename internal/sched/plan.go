package sched

import "encoding/json"

// Plan is what one cycle decided. Binds and Preemptions are to be committed
// together; Pending explains every queued job that stays queued.
type Plan struct {
	Binds       []Bind       `json:"binds"`
	Preemptions []Preemption `json:"preemptions"`
	Pending     []Pending    `json:"pending"`
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
