package wire

// PolicyCondition is the value a policy's condition found (GET
// /v1/policies): utilisation as a fraction, latency in seconds; Text says
// it for a person.
type PolicyCondition struct {
	Metric    string  `json:"metric"`
	Key       string  `json:"key"`
	Held      bool    `json:"held"`
	Seen      bool    `json:"seen"`
	Current   float64 `json:"current"`
	Lowest    float64 `json:"lowest"`
	Threshold float64 `json:"threshold"`
	For       string  `json:"for"`
	Text      string  `json:"text"`
}

// PolicyOverride is a job whose priority class a policy changed in the
// last cycle (or, among a policy's ignored ones, wanted to).
type PolicyOverride struct {
	Job    string `json:"job"`
	Action string `json:"action"`
	From   string `json:"from"`
	To     string `json:"to"`
	Detail string `json:"detail"`
}
