package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSMIRecorded(t *testing.T) {
	tests := []struct {
		file   string
		count  int
		model  string
		memMiB int64
	}{
		{"testdata/h100x8.csv", 8, "H100", 81559},
		{"testdata/a100-noheader.csv", 2, "A100", 81920},
		{"testdata/t4.csv", 1, "T4", 15360},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			devs, err := ParseSMI(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(devs) != tc.count {
				t.Fatalf("%d devices, want %d", len(devs), tc.count)
			}
			for i, d := range devs {
				if d.Index != i || d.Model != tc.model || d.MemoryMiB != tc.memMiB || !strings.HasPrefix(d.UUID, "GPU-") {
					t.Errorf("device %d = %+v", i, d)
				}
			}
		})
	}
}

func TestParseSMIMalformed(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "lists no GPUs"},
		{"header only", "index, uuid, name, memory.total [MiB]\n", "lists no GPUs"},
		{"missing column", "0, GPU-x, Tesla T4\n", "line 1: want 4 columns"},
		{"bad index", "zero, GPU-x, Tesla T4, 15360 MiB\n", "line 1: column 1 (index)"},
		{"bad uuid", "0, 1234, Tesla T4, 15360 MiB\n", "column 2 (uuid)"},
		{"empty name", "0, GPU-x, , 15360 MiB\n", "column 3 (name)"},
		{"bad memory", "0, GPU-x, Tesla T4, [N/A]\n", "column 4 (memory.total)"},
		{"gap in indices", "0, GPU-a, Tesla T4, 15360 MiB\n2, GPU-b, Tesla T4, 15360 MiB\n", "line 2: column 1 (index): want 1, got 2"},
		{"driver error text", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSMI(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestModelOf(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":    "H100",
		"NVIDIA H100 NVL":          "H100",
		"NVIDIA A100-SXM4-80GB":    "A100",
		"NVIDIA A100 80GB PCIe":    "A100",
		"Tesla T4":                 "T4",
		"NVIDIA L4":                "L4",
		"NVIDIA GeForce RTX 4090":  "RTX4090",
		"NVIDIA H200":              "H200",
		"  something unknown here": "something unknown here",
	} {
		if got := ModelOf(name); got != want {
			t.Errorf("ModelOf(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestParseVirtual(t *testing.T) {
	v, err := ParseVirtual("virtual:8xH100-80GB", "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Devices) != 8 || v.Devices[7].Model != "H100" || v.Devices[7].MemoryMiB != 80*1024 || v.Devices[7].UUID != "GPU-virtual-n1-7" {
		t.Fatalf("devices = %+v", v.Devices)
	}
	for _, bad := range []string{"8xH100", "virtual:", "virtual:0xH100", "virtual:8x", "virtual:8xH100-lots", "virtual:axH100", "virtual:99xT4"} {
		if _, err := ParseVirtual(bad, "n1"); err == nil || !strings.Contains(err.Error(), "--gpus") {
			t.Errorf("ParseVirtual(%q) = %v, want an error naming --gpus", bad, err)
		}
	}
}

type fake struct {
	devs []Device
	err  error
}

func (f fake) Discover(context.Context) ([]Device, error) { return f.devs, f.err }

func TestAutoFallsBack(t *testing.T) {
	t4 := []Device{{Index: 0, UUID: "GPU-a", Name: "Tesla T4", Model: "T4", MemoryMiB: 15360}}
	got, err := Auto{NVML: fake{err: errors.New("nvml init: library not found")}, SMI: fake{devs: t4}}.Discover(context.Background())
	if err != nil || len(got) != 1 {
		t.Fatalf("fallback to nvidia-smi: %v %v", got, err)
	}
	_, err = Auto{NVML: fake{err: errors.New("nvml: no lib")}, SMI: fake{err: errors.New("exec: nvidia-smi: not found")}}.Discover(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no lib") || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("both failing: %v", err)
	}
}

// On a host without the NVIDIA driver (no nvidia-smi on $PATH), NVML
// reports an error instead of crashing. On a GPU host both ways find the
// same GPUs: index, UUID, name and memory, device by device (checked on an
// H200 host: scripts/gpu-check.sh).
func TestNVMLAgreesWithSMI(t *testing.T) {
	ctx := context.Background()
	nv, nerr := NVML{}.Discover(ctx)
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		if nerr == nil && len(nv) > 0 {
			t.Logf("NVML found %d GPUs, and there is no nvidia-smi to compare with", len(nv))
			return
		}
		t.Logf("no driver here: NVML says %v", nerr)
		return
	}
	smi, serr := SMI{}.Discover(ctx)
	if nerr != nil || serr != nil {
		t.Fatalf("a GPU host: NVML %v, nvidia-smi %v", nerr, serr)
	}
	if len(nv) != len(smi) || len(nv) == 0 {
		t.Fatalf("NVML found %d GPUs, nvidia-smi %d", len(nv), len(smi))
	}
	for i := range nv {
		if nv[i] != smi[i] {
			t.Errorf("GPU %d: NVML %+v, nvidia-smi %+v", i, nv[i], smi[i])
		}
		if !strings.HasPrefix(nv[i].UUID, "GPU-") || nv[i].MemoryMiB <= 0 || nv[i].Model == "" {
			t.Errorf("GPU %d: %+v", i, nv[i])
		}
		t.Logf("GPU %d: %+v", i, nv[i])
	}
}

func FuzzParseSMI(f *testing.F) {
	for _, p := range []string{"testdata/h100x8.csv", "testdata/a100-noheader.csv", "testdata/t4.csv"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, in string) {
		devs, err := ParseSMI(strings.NewReader(in))
		if err == nil && len(devs) == 0 {
			t.Fatal("no error and no devices")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}

func FuzzParseVirtual(f *testing.F) {
	f.Add("virtual:8xH100-80GB")
	f.Add("virtual:1xT4")
	f.Fuzz(func(t *testing.T, in string) {
		v, err := ParseVirtual(in, "n")
		if err == nil && len(v.Devices) == 0 {
			t.Fatal("no error and no devices")
		}
	})
}

// Without the driver, NVML health says it cannot tell rather than
// reporting problems. On a GPU host (checked on an H200 with
// scripts/gpu-check.sh) a healthy GPU has none, an XID recorded for it is
// one, and Watch either watches until its context ends or says why not.
func TestNVMLHealthOnThisHost(t *testing.T) {
	h := &NVMLHealth{}
	devs, err := NVML{}.Discover(context.Background())
	if err != nil {
		if _, err := h.Problems([]Device{{UUID: "GPU-x"}}); err == nil {
			t.Fatal("no NVML here, yet Problems could tell")
		}
		t.Logf("no driver here: %v", err)
		return
	}
	problems, err := h.Problems(devs)
	if err != nil {
		t.Fatalf("Problems on a GPU host: %v", err)
	}
	t.Logf("problems of %d GPUs: %q", len(devs), problems)
	h.Record(devs[0].UUID, 79, time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC))
	again, err := h.Problems(devs)
	want := fmt.Sprintf("GPU 0 (%s): XID 79 at 2026-12-04T17:00:00Z", devs[0].UUID)
	if err != nil || len(again) != len(problems)+1 || !slices.Contains(again, want) {
		t.Fatalf("after an XID: %q, %v; want %q among them", again, err, want)
	}
	gone, _ := h.Problems([]Device{{Index: 7, UUID: "GPU-00000000-0000-0000-0000-000000000000"}})
	if len(gone) != 1 || !strings.Contains(gone[0], "not found") {
		t.Fatalf("a GPU that is not there: %q", gone)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := h.Watch(ctx, devs); err != nil {
		t.Logf("XIDs not watched here: %v", err)
	} else if time.Since(start) < time.Second {
		t.Fatalf("Watch returned nil after %s, before its context ended", time.Since(start))
	} else {
		t.Logf("watched XIDs for %s", time.Since(start).Round(time.Millisecond))
	}
}

func TestRecordKeepsTheFirstXIDs(t *testing.T) {
	h := &NVMLHealth{}
	at := time.Date(2026, 12, 4, 17, 0, 0, 0, time.FixedZone("CET", 3600))
	for x := range uint64(10) {
		h.Record("GPU-a", 60+x, at)
	}
	if got := h.xids["GPU-a"]; len(got) != 4 || got[0] != "XID 60 at 2026-12-04T16:00:00Z" || got[3] != "XID 63 at 2026-12-04T16:00:00Z" {
		t.Fatalf("kept %q", got)
	}
}
