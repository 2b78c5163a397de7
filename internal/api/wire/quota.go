package wire

import "time"

// QuotaRequestNew is the body of POST /v1/quota-requests: the quota
// wanted (the new total of GPUs, not an increase) of one series in one
// region, and why. Tenant is the token's tenant when left out; an admin
// token must name it.
type QuotaRequestNew struct {
	Tenant string `json:"tenant,omitempty"`
	Region string `json:"region"`
	Series string `json:"series"`
	GPUs   int    `json:"gpus"`
	Reason string `json:"reason"`
}

// QuotaDecision is the body of POST /v1/quota-requests/{id}/approve
// (reason optional) and /deny (reason required).
type QuotaDecision struct {
	Reason string `json:"reason,omitempty"`
}

// QuotaRequest is a quota request as the API shows it.
type QuotaRequest struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Region string `json:"region"`
	Series string `json:"series"`
	// GPUs is the quota wanted; CurrentGPUs the quota when the request
	// was made (null: none).
	GPUs        int        `json:"gpus"`
	CurrentGPUs *int       `json:"current_gpus"`
	Reason      string     `json:"reason"`
	State       string     `json:"state"` // pending, approved or denied
	CreatedAt   time.Time  `json:"created_at"`
	CreatedBy   string     `json:"created_by"`
	DecidedAt   *time.Time `json:"decided_at,omitempty"`
	DecidedBy   string     `json:"decided_by,omitempty"`
	// Note is the reason given with the decision.
	Note string `json:"note,omitempty"`
}

// QuotaSet is the body of PUT /v1/quotas: an administrator's edit of one
// quota (0 forbids the series there), and the answer.
type QuotaSet struct {
	Tenant string `json:"tenant"`
	Region string `json:"region"`
	Series string `json:"series"`
	GPUs   int    `json:"gpus"`
	Reason string `json:"reason,omitempty"`
}

// AuditRecord is one entry of the audit log (GET /v1/audit).
type AuditRecord struct {
	ID     string    `json:"id"`
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`
	Token  string    `json:"token,omitempty"`
	Action string    `json:"action"`
	Object string    `json:"object"`
	Detail string    `json:"detail,omitempty"`
}

// AuditLog is the body of GET /v1/audit: records oldest first; More says
// that records past the last one were left out (over limit).
type AuditLog struct {
	Records []AuditRecord `json:"records"`
	More    bool          `json:"more"`
}
