package gpu

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DriverInfoDir is where the NVIDIA driver describes each GPU it drives,
// one directory per PCI address, each with a file "information" that
// names the GPU's UUID and the minor number of its device node.
const DriverInfoDir = "/proc/driver/nvidia/gpus"

// maxInformation bounds what ParseInformation reads of one file.
const maxInformation = 64 << 10

// ParseInformation reads one of the driver's information files (lines
// "NAME: VALUE") for the GPU's UUID ("GPU UUID") and the minor number of
// its device node ("Device Minor"). An error names the field that is
// missing or malformed.
func ParseInformation(r io.Reader) (uuid string, minor int, err error) {
	minor = -1
	sc := bufio.NewScanner(io.LimitReader(r, maxInformation))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.TrimSpace(name) {
		case "GPU UUID":
			if !strings.HasPrefix(value, "GPU-") {
				return "", -1, fmt.Errorf("GPU UUID: %q is not a GPU UUID", value)
			}
			uuid = value
		case "Device Minor":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 || n > 1<<20 {
				return "", -1, fmt.Errorf("Device Minor: %q is not a device minor number", value)
			}
			minor = n
		}
	}
	if err := sc.Err(); err != nil {
		return "", -1, fmt.Errorf("read driver information: %w", err)
	}
	switch {
	case uuid == "":
		return "", -1, errors.New("GPU UUID: missing")
	case minor < 0:
		return "", -1, errors.New("Device Minor: missing")
	}
	return uuid, minor, nil
}

// driverMinors reads the minor number of every GPU the driver describes
// under dir (DriverInfoDir), by UUID; files it cannot read or parse are
// left out.
func driverMinors(dir string) map[string]int {
	out := map[string]int{}
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "information"))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		uuid, minor, err := ParseInformation(f)
		f.Close()
		if err == nil {
			out[uuid] = minor
		}
	}
	return out
}
