package wire

import "time"

// Node is a fleet node as the API shows it.
type Node struct {
	Name         string   `json:"name"`
	SKU          string   `json:"sku"`
	Region       string   `json:"region"`
	Cluster      string   `json:"cluster"`
	Leaf         string   `json:"leaf"`
	Rack         string   `json:"rack"`
	Health       string   `json:"health"`
	GPUs         int      `json:"gpus"`
	GPUModel     string   `json:"gpu_model"`
	FreeGPUMilli int64    `json:"free_gpu_milli"`
	Jobs         []string `json:"jobs"`
	// Drain is the node's drain, while it stands: by an administrator,
	// "fleet file", "server" (jobs failed there) or "health-check".
	Drain *NodeDrain `json:"drain,omitempty"`
}

// NodeDetail is GET /v1/nodes/{name}: the node as the list gives it, what
// its agent registered, and each GPU's use.
type NodeDetail struct {
	Node
	Address string `json:"address,omitempty"`
	// HealthSince is when the health last changed.
	HealthSince *time.Time `json:"health_since"`
	// LastHeartbeat is the agent's last heartbeat the leader saw; null when
	// it saw none (no agents, or none since it leads).
	LastHeartbeat *time.Time `json:"last_heartbeat"`
	GPUList       []NodeGPU  `json:"gpu_list"`
	// FailedAttempts are the latest attempts that failed on the node (an
	// instance there exited non-zero or was killed), oldest first, at most
	// 5: those the leader saw, and from before it led those of jobs that
	// have not ended or ended within the last 10 minutes.
	FailedAttempts []NodeFailure `json:"failed_attempts"`
	// Reservation is the reservation that holds the node in its window,
	// or keeps it for its start (ReservationAhead), as the leader's last
	// cycle chose; empty for none.
	Reservation      string `json:"reservation,omitempty"`
	ReservationAhead bool   `json:"reservation_ahead,omitempty"`
	// Images are the images the node's agent last said it holds (its
	// heartbeats; the leader keeps them), which the core prefers the node
	// for among nodes otherwise alike; absent for none.
	Images []string `json:"images,omitempty"`
}

// NodeFailure is one attempt that failed on a node.
type NodeFailure struct {
	Job      string    `json:"job"`
	Tenant   string    `json:"tenant"`
	Attempt  int       `json:"attempt"`
	ExitCode int       `json:"exit_code"`
	At       time.Time `json:"at"`
	Detail   string    `json:"detail"`
}

// NodeGPU is one GPU of a node: its index, what the agent registered
// (uuid, memory_mib: with agents only), and the milli-GPU and jobs on it.
type NodeGPU struct {
	Index     int      `json:"index"`
	UUID      string   `json:"uuid,omitempty"`
	Model     string   `json:"model"`
	MemoryMiB int64    `json:"memory_mib,omitempty"`
	UsedMilli int64    `json:"used_milli"`
	Jobs      []string `json:"jobs"`
}

// NodeDrain is a drain of a node (an administrator's or allot's own): the
// work on it runs on, nothing new is placed there.
type NodeDrain struct {
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// DrainRequest is the body of POST /v1/nodes/{name}/drain.
type DrainRequest struct {
	Reason string `json:"reason"`
}

// SKU is a SKU offered in one region with its capacity now.
type SKU struct {
	Name        string `json:"name"`
	Series      string `json:"series"`
	GPUModel    string `json:"gpu_model"`
	GPUsPerNode int    `json:"gpus_per_node"`
	Region      string `json:"region"`
	Nodes       int    `json:"nodes"`
	FreeNodes   int    `json:"free_nodes"`
	// ReservedNodes are the nodes that reservations active now hold:
	// only their owners' work, and spot work while they idle, runs there.
	ReservedNodes    int     `json:"reserved_nodes"`
	FreeGPUs         float64 `json:"free_gpus"`
	PricePerHour     float64 `json:"price_per_hour"`
	SpotPricePerHour float64 `json:"spot_price_per_hour"`
}

// Token is the answer of POST /v1/tokens.
type Token struct {
	Token  string `json:"token"`
	Tenant string `json:"tenant,omitempty"`
	Node   string `json:"node,omitempty"`
	// ID names the token in 'allot token list' and revoke: the first
	// digits of its hash, never the token.
	ID        string     `json:"id,omitempty"`
	Name      string     `json:"name,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}
