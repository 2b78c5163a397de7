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

// Pull is the pull of an instance's image, as its agent last reported it:
// bytes fetched and the image's size, 0 where its runtime cannot tell.
type Pull struct {
	Rank   int    `json:"rank"`
	Node   string `json:"node"`
	Image  string `json:"image"`
	Pulled int64  `json:"pulled_bytes"`
	Total  int64  `json:"total_bytes"`
}
