package wire

// RegisterRequest is the body of POST /v1/nodes/{name}/register.
type RegisterRequest struct {
	GPUs    []RegisterGPU `json:"gpus"`
	Address string        `json:"address"`
}

// HeartbeatRequest is the optional body of POST
// /v1/nodes/{name}/heartbeat: the image references the node holds (its
// agent pulled them and keeps them in its cache), for the core's
// image-locality term. A heartbeat without a body leaves what the node
// reported before.
type HeartbeatRequest struct {
	Images []string `json:"images"`
}

// MaxHeartbeatImages bounds HeartbeatRequest.Images: an agent with more
// reports the ones its jobs used last.
const MaxHeartbeatImages = 256

// RegisterGPU is one GPU an agent found.
type RegisterGPU struct {
	Index     int    `json:"index"`
	UUID      string `json:"uuid"`
	Model     string `json:"model"`
	MemoryMiB int64  `json:"memory_mib"`
}

// HealthReport is the body of POST /v1/nodes/{name}/health: the result of
// the node's health check. Healthy is required (a report without it is
// refused rather than read as a failure).
type HealthReport struct {
	Healthy *bool  `json:"healthy"`
	Detail  string `json:"detail,omitempty"` // the check's exit status and output
}

// HealthAnswer is the answer of POST /v1/nodes/{name}/health: whether the
// report drained the node or ended its health-check drain.
type HealthAnswer struct {
	Changed bool `json:"changed"`
}

// MaxHealthDetail bounds HealthReport.Detail.
const MaxHealthDetail = 4096

// Assignments is the answer of GET /v1/nodes/{name}/assignments.
type Assignments struct {
	Rev  int64        `json:"rev"`
	Run  []Assignment `json:"run"`
	Stop []StopOrder  `json:"stop"`
}

// Assignment is one instance of an attempt a node should run. Durations
// are Go duration text ("30s"); timeout is empty for none.
type Assignment struct {
	Job        string            `json:"job"`
	Attempt    int               `json:"attempt"`
	Rank       int               `json:"rank"`
	WorldSize  int               `json:"world_size"`
	Command    []string          `json:"command"`
	Env        map[string]string `json:"env,omitempty"`
	ArrayIndex *int              `json:"array_index,omitempty"`
	GPUs       []AssignedGPU     `json:"gpus"`
	GPUMilli   int64             `json:"gpu_milli"`
	MasterAddr string            `json:"master_addr"`
	MasterPort int               `json:"master_port"`
	ResumeFrom string            `json:"resume_from,omitempty"`
	// ResumeNode is the node whose disk holds ResumeFrom, when known.
	ResumeNode string `json:"resume_node,omitempty"`
	// NoResume says why the instance starts from the beginning though the
	// job has a checkpoint: not every rank of the attempt reaches its part.
	NoResume string `json:"no_resume,omitempty"`
	Timeout  string `json:"timeout,omitempty"`
	Grace    string `json:"grace"`
	Started  bool   `json:"started"`
	// Container, when set, runs the instance from an image; nil runs
	// Command on the host.
	Container *Container `json:"container,omitempty"`
	// CPUMilli and MemoryMiB are the instance's CPU (milli-cores) and
	// memory requests, its limits in a container; 0 when not set.
	CPUMilli  int64 `json:"cpu_milli,omitempty"`
	MemoryMiB int64 `json:"memory_mib,omitempty"`
	// RegistryAuth is the job's tenant's credential for the registry of
	// Container's image, for its pull alone; absent when it has none.
	RegistryAuth *RegistryAuth `json:"registry_auth,omitempty"`
}

// RegistryAuth is a registry credential as an auth file holds it.
type RegistryAuth struct {
	Registry string `json:"registry"`
	Auth     string `json:"auth"` // base64 of USER:PASSWORD
}

// RegistryCredentialSet is the body of PUT
// /v1/registry-credentials/{registry}.
type RegistryCredentialSet struct {
	Tenant   string `json:"tenant,omitempty"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// RegistryCredential is a tenant's registry credential as the API shows
// it: never its secret.
type RegistryCredential struct {
	Tenant   string `json:"tenant"`
	Registry string `json:"registry"`
	SetAt    string `json:"set_at"`
	SetBy    string `json:"set_by"`
}

// Container is the image an instance runs from and what of it the job
// overrides (a job file's image, args, workdir and mounts).
type Container struct {
	Image   string   `json:"image"`
	Args    []string `json:"args,omitempty"`
	Workdir string   `json:"workdir,omitempty"`
	Mounts  []Mount  `json:"mounts,omitempty"`
}

// Mount is a host directory a container sees at Target.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// AssignedGPU is one GPU of an assignment.
type AssignedGPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
}

// StopOrder is an instance a node must stop within grace.
type StopOrder struct {
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	Rank    int    `json:"rank"`
	Grace   string `json:"grace"`
	Reason  string `json:"reason"`
}

// AttemptEvent is the body of POST /v1/jobs/{id}/attempts/{n}/events.
type AttemptEvent struct {
	Type     string `json:"type"`
	Rank     int    `json:"rank"`
	Node     string `json:"node"`
	ExitCode int    `json:"exit_code"`
	Outcome  string `json:"outcome"`
	Killed   bool   `json:"killed"`
	// Message says why an instance could not start or how it ended, in
	// words the tenant can act on (at most MaxEventMessage bytes of
	// printable text).
	Message string `json:"message,omitempty"`
	// Pulled and PullTotal are how far the pull of the instance's image
	// has come, for an event of type "pulling": bytes fetched and the
	// image's size, each 0 where the runtime cannot tell.
	Pulled    int64 `json:"pulled,omitempty"`
	PullTotal int64 `json:"pull_total,omitempty"`
}

// MaxEventMessage bounds AttemptEvent.Message.
const MaxEventMessage = 512

// CheckpointRequest is the body of POST /v1/jobs/{id}/checkpoint.
type CheckpointRequest struct {
	Path string `json:"path"`
	// Node is the node whose disk holds Path; empty for a node token's own
	// node, or for a URL, which no node holds.
	Node string `json:"node,omitempty"`
	// Shared says every host reaches Path (the agents' shared checkpoint
	// root): no node holds it, and the next attempt resumes from it
	// wherever it runs. A URL is always so.
	Shared bool `json:"shared,omitempty"`
	// Rank, when set, makes Path that rank's part of a save every rank of
	// the job makes; the save is the job's checkpoint once every rank's
	// part is in. Absent, Path serves every rank.
	Rank *int `json:"rank,omitempty"`
	// Step names the rank's save, the same for every rank (the path
	// relative to the rank's checkpoint directory); empty means the path's
	// last element.
	Step string `json:"step,omitempty"`
}

// JobFilesRequest is the body of POST /v1/nodes/{name}/job-files: jobs
// whose files lie on the node, unused there for the agent's keep.
type JobFilesRequest struct {
	Jobs []string `json:"jobs"`
}

// JobFiles answers a JobFilesRequest: the jobs whose files the node must
// keep, since they have not ended and their next attempt may need them
// (their checkpoint lies there).
type JobFiles struct {
	Keep []string `json:"keep"`
}

// MaxJobFilesAsk bounds JobFilesRequest.Jobs.
const MaxJobFilesAsk = 10000
