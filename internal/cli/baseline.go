package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// A bench command given --baseline FILE compares its result with FILE, the
// JSON (-o json) of an earlier run of the same command: every declared
// figure more than baselineTolerance worse than in FILE is printed, and the
// command exits with ExitRegressed. The file is read and checked before the
// bench runs, so a wrong file fails at once; the result is printed in full
// before the comparison, so a CI log shows both.

// baselineTolerance is how much worse than its baseline a figure may be.
const baselineTolerance = 0.20

// direction says which way a figure improves.
type direction int

const (
	higherIsBetter direction = iota + 1 // throughput: jobs/s, submits/s
	lowerIsBetter                       // latency, time, memory
	// sameSetting marks a setting of the run (nodes, clients; a number or
	// a string): the baseline must have been measured with the same value,
	// or nothing compares.
	sameSetting
)

func (d direction) String() string {
	switch d {
	case higherIsBetter:
		return "higher is better"
	case lowerIsBetter:
		return "lower is better"
	}
	return "a setting"
}

// figure is one number of a bench result that --baseline compares: its
// JSON name (a dotted path into nested objects, "cycle.p99_ms") and the way
// it improves.
type figure struct {
	name string
	dir  direction
}

// regressionError reports the figures that got worse than their baseline;
// Run exits with ExitRegressed on it.
type regressionError struct {
	path  string
	worse []string // one line per figure
}

func (e *regressionError) Error() string {
	return fmt.Sprintf("%d figure(s) more than %.0f %% worse than baseline %s: %s", len(e.worse),
		baselineTolerance*100, e.path, strings.Join(e.worse, "; "))
}

// addBenchFlags registers what every bench command takes: -o, --baseline,
// and the hidden --cpuprofile of what it measures.
func addBenchFlags(cmd *cobra.Command, output, cpuProfile, baseline *string, measured string) {
	fl := cmd.Flags()
	fl.StringVarP(output, "output", "o", "table", "output format: table or json")
	fl.StringVar(cpuProfile, "cpuprofile", "", "write a CPU profile of "+measured+" to this file")
	_ = fl.MarkHidden("cpuprofile")
	fl.StringVar(baseline, "baseline", "", fmt.Sprintf("JSON of an earlier run (-o json) to compare with: exit %d when a figure is more than %.0f %% worse",
		ExitRegressed, baselineTolerance*100))
}

// baseline is a bench result read back from a --baseline file, with the
// figures the command compares.
type baseline struct {
	path    string
	values  map[string]any
	figures []figure
}

// loadBaseline reads the --baseline file at path for a command that
// compares figures. It returns nil when path is empty. A file that cannot
// be read, is not a JSON object, or lacks one of the figures as a number
// (the output of another bench, say) is a usage error.
func loadBaseline(path string, figures []figure) (*baseline, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Usage(fmt.Errorf("--baseline %s: no such file (write one with -o json > %s)", path, path))
	}
	if err != nil {
		return nil, Usage(fmt.Errorf("--baseline: %w", err))
	}
	var values map[string]any
	if err := json.Unmarshal(data, &values); err != nil {
		return nil, Usage(fmt.Errorf("--baseline %s: not the JSON object that -o json prints: %w", path, err))
	}
	for _, f := range figures {
		var err error
		if f.dir == sameSetting {
			_, err = setting(values, f.name)
		} else {
			_, err = number(values, f.name)
		}
		if err != nil {
			return nil, Usage(fmt.Errorf("--baseline %s: %w; is it the -o json output of this bench command?", path, err))
		}
	}
	return &baseline{path: path, values: values, figures: figures}, nil
}

// sameSettings returns a usage error when result (a struct that marshals to
// a JSON object, filled at least in its settings) was set up differently
// from the baseline; nil when it was alike, and when b is nil. A command
// calls it before it runs, so that a wrong file fails at once.
func (b *baseline) sameSettings(result any) error {
	if b == nil {
		return nil
	}
	cur, err := asObject(result)
	if err != nil {
		return err
	}
	for _, f := range b.figures {
		if f.dir != sameSetting {
			continue
		}
		was, _ := setting(b.values, f.name) // checked by loadBaseline
		now, err := setting(cur, f.name)
		if err != nil {
			return fmt.Errorf("result: %w", err) // the command's own figures: a bug
		}
		if was != now {
			return Usage(fmt.Errorf("--baseline %s was measured with %s %s, this run has %s: compare runs of the same settings",
				b.path, f.name, was, now))
		}
	}
	return nil
}

// check compares result (a struct that marshals to a JSON object) with the
// baseline figure by figure. It prints each figure more than
// baselineTolerance worse to w and then returns a *regressionError; it
// returns nil when none is, and when b is nil. Settings that differ are a
// usage error (see sameSettings).
func (b *baseline) check(w io.Writer, result any) error {
	if err := b.sameSettings(result); err != nil || b == nil {
		return err
	}
	cur, err := asObject(result)
	if err != nil {
		return err
	}
	var worse []string
	for _, f := range b.figures {
		if f.dir == sameSetting {
			continue
		}
		was, _ := number(b.values, f.name) // checked by loadBaseline
		now, err := number(cur, f.name)
		if err != nil {
			return fmt.Errorf("result: %w", err) // the command's own figures: a bug
		}
		if by := worseBy(f.dir, was, now); by > baselineTolerance {
			line := fmt.Sprintf("%s %s → %s (%s, %s)", f.name, figureText(was), figureText(now), worseText(by), f.dir)
			fmt.Fprintf(w, "regression: %s\n", line)
			worse = append(worse, line)
		}
	}
	if len(worse) > 0 {
		return &regressionError{path: b.path, worse: worse}
	}
	return nil
}

// worseBy returns by what fraction cur is worse than base in direction d:
// 0 when it is as good or better, +Inf when base is 0 and a lower-is-better
// figure grew from it.
func worseBy(d direction, base, cur float64) float64 {
	var by float64
	switch {
	case base == 0 && d == lowerIsBetter && cur > 0:
		return math.Inf(1)
	case base == 0:
		return 0
	case d == higherIsBetter:
		by = (base - cur) / math.Abs(base)
	default:
		by = (cur - base) / math.Abs(base)
	}
	return max(by, 0)
}

func worseText(by float64) string {
	if math.IsInf(by, 1) {
		return "up from 0"
	}
	return fmt.Sprintf("%.1f %% worse", by*100)
}

func figureText(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// asObject returns v as the JSON object it marshals to.
func asObject(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("result is not a JSON object: %w", err)
	}
	return m, nil
}

// setting returns the number or string at the dotted path name in m, as
// text.
func setting(m map[string]any, name string) (string, error) {
	v, err := lookup(m, name)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case float64:
		return figureText(v), nil
	case string:
		return strconv.Quote(v), nil
	}
	return "", fmt.Errorf("figure %q is %s, not a number or a string", name, jsonKind(v))
}

// number returns the number at the dotted path name in m.
func number(m map[string]any, name string) (float64, error) {
	v, err := lookup(m, name)
	if err != nil {
		return 0, err
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("figure %q is %s, not a number", name, jsonKind(v))
	}
	return f, nil
}

// lookup returns the value at the dotted path name in m.
func lookup(m map[string]any, name string) (any, error) {
	parts := strings.Split(name, ".")
	var v any = m
	for i, p := range parts {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("figure %q: %s is not an object", name, strings.Join(parts[:i], "."))
		}
		if v, ok = obj[p]; !ok {
			return nil, fmt.Errorf("figure %q is missing", name)
		}
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
