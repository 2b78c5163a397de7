package client

import (
	"encoding/json"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// JobDocument returns s as a JSON job document, the body Submit sends: the
// same fields and units as a job YAML file (spec.Document), so the server
// reads back exactly s.
func JobDocument(s model.JobSpec) ([]byte, error) { return json.Marshal(spec.DocumentOf(s)) }
