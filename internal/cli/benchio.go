package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// What the bench commands share: a status line on a terminal, and the
// process's memory.

// progress draws a one-line bar on a terminal and nothing elsewhere.
type progress struct{ w io.Writer }

func newProgress(w io.Writer) *progress {
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return &progress{w: f}
		}
	}
	return &progress{}
}

// line rewrites the status line with s; "" clears it.
func (p *progress) line(s string) {
	if p.w != nil {
		fmt.Fprintf(p.w, "\r\033[K%s", s)
	}
}

func (p *progress) say(msg string) { p.line(msg + "…") }

func (p *progress) step(done, total int, msg string) {
	if p.w == nil {
		return
	}
	const width = 30
	k := width * done / max(total, 1)
	fmt.Fprintf(p.w, "\r\033[Kcycle %d/%d [%s%s] %s", done+1, total, strings.Repeat("#", k), strings.Repeat(".", width-k), msg)
}

func (p *progress) done() { p.line("") }

// rssMiB returns the process's resident memory now and its peak (VmRSS and
// VmHWM of /proc/self/status), in MiB; zeros where they cannot be read.
func rssMiB() (now, peak float64) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			continue
		}
		if name == "VmRSS" {
			now = kb / 1024
		} else {
			peak = kb / 1024
		}
	}
	return now, peak
}

// startProfile starts a CPU profile into the file at path (none when path
// is empty) and returns what stops it and closes the file.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
