package spec

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Limits that keep unit conversions far from overflow. They are well above
// anything a real machine or job has.
const (
	maxKilowatts = 1e9        // per rack or region
	maxCores     = 1 << 20    // per instance
	maxMemoryMiB = 1 << 40    // per instance (1 EiB)
	maxDuration  = 1e6 * 3600 // hours, in seconds: about 114 years
)

// kilowatts is a power written in kW and kept in watts, e.g. 10.2 → 10200.
type kilowatts int64

func (w *kilowatts) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	kw, err := number(n)
	if err != nil {
		return err
	}
	if math.Abs(kw) > maxKilowatts {
		return fmt.Errorf("%v kW is out of range", kw)
	}
	*w = kilowatts(math.Round(kw * 1000))
	return nil
}

// cpu is a CPU amount in milli-cores, written as cores (32, 0.5) or as
// milli-cores with the suffix m ("500m").
type cpu int64

func (c *cpu) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	bad := fmt.Errorf("want cores like 32, 0.5 or \"500m\", got %s", describe(n))
	if n.Kind != yaml.ScalarNode {
		return bad
	}
	s := strings.TrimSpace(n.Value)
	if m, ok := strings.CutSuffix(s, "m"); ok && n.ShortTag() == "!!str" {
		v, err := strconv.ParseInt(m, 10, 64)
		if err != nil || v > maxCores*1000 || v < -maxCores*1000 {
			return bad
		}
		*c = cpu(v)
		return nil
	}
	cores, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(cores) || math.Abs(cores) > maxCores {
		return bad
	}
	milli := math.Round(cores * 1000)
	if math.Abs(milli-cores*1000) > 1e-6 {
		return fmt.Errorf("%s is finer than a milli-core", s)
	}
	*c = cpu(milli)
	return nil
}

// memory is a memory size in MiB, written with a binary suffix ("512Mi",
// "64Gi", "1Ti") or as a plain integer of MiB.
type memory int64

func (m *memory) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	bad := fmt.Errorf("want a size like 512Mi, 64Gi, 1Ti or an integer of MiB, got %s", describe(n))
	if n.Kind != yaml.ScalarNode {
		return bad
	}
	s := strings.TrimSpace(n.Value)
	unit := int64(1)
	for _, u := range []struct {
		suffix string
		mib    int64
	}{{"Mi", 1}, {"Gi", 1 << 10}, {"Ti", 1 << 20}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, unit = num, u.mib
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return bad
	}
	if v > maxMemoryMiB/unit || v < -maxMemoryMiB/unit {
		return fmt.Errorf("%s is out of range", n.Value)
	}
	*m = memory(v * unit)
	return nil
}

// duration is a Go duration string: "90s", "30m", "2h", "1h30m".
type duration time.Duration

func (d *duration) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" && n.Value == "0" {
		*d = 0
		return nil
	}
	bad := fmt.Errorf("want a duration like 90s, 30m or 2h30m, got %s", describe(n))
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return bad
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		if strings.HasSuffix(strings.TrimSpace(n.Value), "d") {
			return errors.New("days (d) are not a unit of durations; write hours, e.g. 24h")
		}
		return bad
	}
	if v.Abs() > maxDuration*time.Second {
		return fmt.Errorf("%s is out of range", n.Value)
	}
	*d = duration(v)
	return nil
}

// timestamp is an RFC 3339 time ("2026-01-01T00:00:00Z") or a date
// ("2026-01-01", midnight UTC).
type timestamp time.Time

func (t *timestamp) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	bad := fmt.Errorf("want a time like 2026-01-01T00:00:00Z or a date like 2026-01-01, got %s", describe(n))
	if n.Kind != yaml.ScalarNode {
		return bad
	}
	v, ok := ParseTime(n.Value)
	if !ok {
		return bad
	}
	*t = timestamp(v)
	return nil
}

// ParseTime reads a time as a job file's begin: RFC 3339
// ("2026-01-01T00:00:00Z") or a date ("2026-01-01", midnight UTC).
func ParseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if v, err := time.Parse(layout, s); err == nil {
			return v, true
		}
	}
	return time.Time{}, false
}

// command is a program and its arguments, or a string run by /bin/sh -c.
type command []string

func (c *command) decodeNode(d *decoder, n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if strings.TrimSpace(n.Value) == "" {
			return errors.New("want a shell command, got an empty string")
		}
		*c = command{"/bin/sh", "-c", n.Value}
		return nil
	case yaml.SequenceNode:
		out := make(command, 0, len(n.Content))
		for i, a := range n.Content {
			if err := d.visit(a, path); err != nil {
				return err
			}
			a = resolve(a)
			if a == nil || a.Kind != yaml.ScalarNode {
				return d.errorAt(a, fmt.Sprintf("%s[%d]", path, i), "want a string, got %s", describe(a))
			}
			out = append(out, a.Value)
		}
		*c = out
		return nil
	}
	return fmt.Errorf("want a list of arguments or a shell command string, got %s", describe(n))
}

// SizeText writes n bytes in the largest binary unit that divides it:
// "4 MiB", "32 KiB", "1000 bytes".
func SizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
