package demo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSeeGPUs(t *testing.T) {
	dev := t.TempDir()
	for _, n := range []string{"nvidia10", "nvidia2", "nvidiactl", "nvidia-uvm", "null", "nvidia-caps"} {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	v, err := SeeGPUs(dev, "GPU-b,GPU-a")
	if err != nil {
		t.Fatal(err)
	}
	want := "CUDA_VISIBLE_DEVICES=GPU-b,GPU-a\ngpu-devices=nvidia2,nvidia10 control=nvidia-caps,nvidia-uvm,nvidiactl\n"
	if v.String() != want {
		t.Errorf("view\n%s\nwant\n%s", v, want)
	}
	for _, tc := range []struct {
		gpus, devices int
		want          string // "" for no problem
	}{
		{2, 2, ""},
		{-1, -1, ""},
		{2, -1, ""},
		{1, 2, "CUDA_VISIBLE_DEVICES names 2 GPUs (2 distinct), want 1"},
		{2, 0, "/dev holds 2 GPU device nodes (nvidia2,nvidia10), want 0"},
		{3, 3, "CUDA_VISIBLE_DEVICES names 2 GPUs (2 distinct), want 3; /dev holds 2 GPU device nodes (nvidia2,nvidia10), want 3"},
	} {
		err := v.Check(tc.gpus, tc.devices)
		if (tc.want == "") != (err == nil) || (err != nil && err.Error() != tc.want) {
			t.Errorf("Check(%d, %d) = %v, want %q", tc.gpus, tc.devices, err, tc.want)
		}
	}
	// A GPU named twice is not two GPUs.
	v.Visible = []string{"GPU-a", "GPU-a"}
	if err := v.Check(2, -1); err == nil || !strings.Contains(err.Error(), "1 distinct") {
		t.Errorf("a GPU named twice: %v", err)
	}
	if _, err := SeeGPUs(filepath.Join(dev, "none"), ""); err == nil {
		t.Error("a /dev that is not there: no error")
	}
}
