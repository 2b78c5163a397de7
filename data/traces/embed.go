package traces

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

// files holds the built-in traces, byte for byte as in this folder.
//
//go:embed azure-llm/*.csv philly/philly_jobs.csv
var files embed.FS

// builtin maps a trace's short name to its file in files.
var builtin = map[string]string{
	"azure-code": "azure-llm/AzureLLMInferenceTrace_code.csv",
	"azure-conv": "azure-llm/AzureLLMInferenceTrace_conv.csv",
	"philly":     "philly/philly_jobs.csv",
}

// ErrUnknown is wrapped by Open's error for a name that is not built in.
var ErrUnknown = errors.New("traces: unknown trace")

// Names lists the built-in traces' names, sorted.
func Names() []string { return slices.Sorted(maps.Keys(builtin)) }

// Open opens the built-in trace called name; the caller closes it.
func Open(name string) (fs.File, error) {
	path, ok := builtin[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	return files.Open(path)
}
