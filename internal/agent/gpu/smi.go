package gpu

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// SMIQuery is the nvidia-smi invocation ParseSMI reads.
var SMIQuery = []string{"--query-gpu=index,uuid,name,memory.total", "--format=csv"}

// SMI discovers GPUs by running nvidia-smi.
type SMI struct {
	// Path is the nvidia-smi binary; empty means "nvidia-smi" on $PATH.
	Path string
	// InfoDir is where the driver describes its GPUs, read for their
	// device nodes' minor numbers (nvidia-smi's queries do not give them);
	// empty means DriverInfoDir.
	InfoDir string
}

// Discover runs nvidia-smi and parses its output, and takes each GPU's
// minor number from the driver's description of it (-1 where there is
// none).
func (s SMI) Discover(ctx context.Context) ([]Device, error) {
	path := s.Path
	if path == "" {
		path = "nvidia-smi"
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, SMIQuery...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("run %s: %w: %s", path, err, msg)
		}
		return nil, fmt.Errorf("run %s: %w", path, err)
	}
	devs, err := ParseSMI(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	dir := s.InfoDir
	if dir == "" {
		dir = DriverInfoDir
	}
	minors := driverMinors(dir)
	for i := range devs {
		if m, ok := minors[devs[i].UUID]; ok {
			devs[i].Minor = m
		}
	}
	return devs, nil
}

// ParseSMI reads the CSV that `nvidia-smi --query-gpu=index,uuid,name,memory.total
// --format=csv` prints (with or without the header line and units).
func ParseSMI(r io.Reader) ([]Device, error) {
	sc := bufio.NewScanner(r)
	var out []Device
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if line == 1 && strings.HasPrefix(text, "index") {
			continue // the header
		}
		d, err := parseSMIRow(text)
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi output line %d: %w", line, err)
		}
		if d.Index != len(out) {
			return nil, fmt.Errorf("nvidia-smi output line %d: column 1 (index): want %d, got %d", line, len(out), d.Index)
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read nvidia-smi output: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("nvidia-smi output lists no GPUs")
	}
	return out, nil
}

func parseSMIRow(text string) (Device, error) {
	cols := strings.Split(text, ",")
	if len(cols) != 4 {
		return Device{}, fmt.Errorf("want 4 columns (index, uuid, name, memory.total), got %d", len(cols))
	}
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	idx, err := strconv.Atoi(cols[0])
	if err != nil || idx < 0 {
		return Device{}, fmt.Errorf("column 1 (index): %q is not a GPU index", cols[0])
	}
	if !strings.HasPrefix(cols[1], "GPU-") && !strings.HasPrefix(cols[1], "MIG-") {
		return Device{}, fmt.Errorf("column 2 (uuid): %q is not a GPU UUID", cols[1])
	}
	if cols[2] == "" {
		return Device{}, errors.New("column 3 (name): empty")
	}
	mem := strings.TrimSpace(strings.TrimSuffix(cols[3], "MiB"))
	mib, err := strconv.ParseInt(mem, 10, 64)
	if err != nil || mib <= 0 {
		return Device{}, fmt.Errorf("column 4 (memory.total): %q is not a size in MiB", cols[3])
	}
	return Device{Index: idx, Minor: -1, UUID: cols[1], Name: cols[2], Model: ModelOf(cols[2]), MemoryMiB: mib}, nil
}
