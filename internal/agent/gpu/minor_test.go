package gpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseInformation(t *testing.T) {
	f, err := os.Open("testdata/driver/gpu-18/information")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	uuid, minor, err := ParseInformation(f)
	if err != nil || uuid != "GPU-0b5a1c2e-0000-4a6e-9d1c-000000000001" || minor != 4 {
		t.Fatalf("ParseInformation = %q, %d, %v; want the recorded GPU's UUID and minor 4", uuid, minor, err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "GPU UUID: missing"},
		{"no minor", "GPU UUID: \t GPU-a\n", "Device Minor: missing"},
		{"no uuid", "Device Minor: \t 3\n", "GPU UUID: missing"},
		{"bad minor", "GPU UUID: GPU-a\nDevice Minor: three\n", `Device Minor: "three"`},
		{"negative minor", "GPU UUID: GPU-a\nDevice Minor: -1\n", `Device Minor: "-1"`},
		{"bad uuid", "GPU UUID: 1234\nDevice Minor: 0\n", `GPU UUID: "1234"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseInformation(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one with %q", err, tc.want)
			}
		})
	}
}

// nvidia-smi gives no minor numbers: SMI takes them from the driver's
// description of each GPU, by UUID, and says -1 where there is none.
func TestSMIMinorsFromDriver(t *testing.T) {
	dir := t.TempDir()
	smi := filepath.Join(dir, "nvidia-smi")
	script := "#!/bin/sh\ncat <<'END'\nindex, uuid, name, memory.total [MiB]\n" +
		"0, GPU-0b5a1c2e-0000-4a6e-9d1c-000000000002, NVIDIA H100 80GB HBM3, 81559 MiB\n" +
		"1, GPU-0b5a1c2e-0000-4a6e-9d1c-000000000001, NVIDIA H100 80GB HBM3, 81559 MiB\n" +
		"2, GPU-0b5a1c2e-0000-4a6e-9d1c-000000000003, NVIDIA H100 80GB HBM3, 81559 MiB\nEND\n"
	if err := os.WriteFile(smi, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	devs, err := SMI{Path: smi, InfoDir: "testdata/driver"}.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, 4, -1}
	if len(devs) != len(want) {
		t.Fatalf("%d devices, want %d", len(devs), len(want))
	}
	for i, d := range devs {
		if d.Index != i || d.Minor != want[i] {
			t.Errorf("device %d: index %d minor %d, want index %d minor %d", i, d.Index, d.Minor, i, want[i])
		}
	}
}

func FuzzParseInformation(f *testing.F) {
	b, err := os.ReadFile("testdata/driver/gpu-18/information")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("GPU UUID: GPU-a\nDevice Minor: 0\n")
	f.Fuzz(func(t *testing.T, in string) {
		uuid, minor, err := ParseInformation(strings.NewReader(in))
		if err != nil {
			if err.Error() == "" || minor != -1 || uuid != "" {
				t.Fatalf("error %q with %q, %d", err, uuid, minor)
			}
			return
		}
		if !strings.HasPrefix(uuid, "GPU-") || minor < 0 {
			t.Fatalf("no error, and %q, %d", uuid, minor)
		}
	})
}
