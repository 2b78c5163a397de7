package wire

import "time"

// Alert is a built-in alert as GET /v1/alerts and the alert webhook show
// it (docs/alerts.md).
type Alert struct {
	Name     string `json:"name"`     // the rule: AllotNodeNotReady, ...
	Severity string `json:"severity"` // warning or critical
	State    string `json:"state"`    // pending, firing or resolved
	// Labels say which instance: node, region, partition, endpoint, ...
	Labels  map[string]string `json:"labels"`
	Value   float64           `json:"value"`   // the rule expression's value
	Summary string            `json:"summary"` // one sentence for a person
	// Since is when the condition started to hold; FiredAt when the alert
	// started firing (absent while pending); ResolvedAt when it resolved.
	Since      time.Time  `json:"since"`
	FiredAt    *time.Time `json:"fired_at,omitempty"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// AlertNotice is the body the server POSTs to --alert-webhook: the alerts
// that started firing or resolved in one evaluation.
type AlertNotice struct {
	Version int       `json:"version"` // 1
	Source  string    `json:"source"`  // "allot"
	URL     string    `json:"url,omitempty"`
	SentAt  time.Time `json:"sent_at"`
	Alerts  []Alert   `json:"alerts"`
}
