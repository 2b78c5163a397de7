package wire

// JobError is one problem of a refused batch (POST /v1/jobs/batch): a job
// the server refuses (Index and Name say which), or a problem in the body
// (no Index; Message names the line).
type JobError struct {
	Index   *int   `json:"index,omitempty"`
	Name    string `json:"name,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// AccountingRow is the GPU time of one job, or of one tenant's jobs, over
// the period of GET /v1/accounting.
type AccountingRow struct {
	Tenant   string  `json:"tenant"`
	Job      string  `json:"job,omitempty"`
	Name     string  `json:"name,omitempty"`
	State    string  `json:"state,omitempty"`
	Jobs     int     `json:"jobs"`
	Attempts int     `json:"attempts"`
	GPUHours float64 `json:"gpu_hours"`
}
