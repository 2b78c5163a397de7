package cli

import (
	"testing"
	"time"
)

// FuzzRunSpecs holds the job 'job run' builds from its flags to the
// contract of a job file: any flag values give valid jobs or an error
// with a message, never a panic.
func FuzzRunSpecs(f *testing.F) {
	f.Add("train", "acme", "spot:5", "0-3", "2", "8Gi", "H100", "python", "", 1, "1", int64(0))
	f.Add("", "", "", "", "", "", "", "x", "6h", 0, "2-8:2", int64(250))
	f.Add("n\x00", "t", "urgent", "5-1", "-1", "1Ti", "", "\xff", "-1h", 99, "0", int64(5000))
	f.Add("a", "b", "reserved", "1,2,3", "500m", "512Mi", "t4", "sh", "2026-12-24T02:00:00Z", 8, "4097", int64(-1))
	f.Add("a", "b", "", "", "", "", "", "sh", "9999999999h", 1, "6-2:-1", int64(0))
	f.Fuzz(func(t *testing.T, name, tenant, priority, array, cpu, memory, model, prog, begin string, gpus int, instances string, milli int64) {
		r := runFlags{name: name, tenant: tenant, priority: priority, array: array, cpu: cpu, memory: memory,
			gpus: gpus, instances: instances, gpuMilli: milli, begin: begin, timeout: memory, maxRetries: gpus, now: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
		if model != "" {
			r.models = []string{model}
			r.exclude = []string{model, name} // any text, as a node's name
			r.nodes = []string{prog}
		}
		specs, err := runSpecs(r, []string{prog, "--flag"})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("error without a message")
			}
			return
		}
		if len(specs) == 0 {
			t.Fatal("no job and no error")
		}
		for _, s := range specs {
			if tenant == "" {
				s.Tenant = "filled-in-by-the-server"
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("job %+v fails Validate: %v", s, err)
			}
		}
	})
}

// FuzzRunImage holds 'job run --image' to the same contract: any image,
// working directory, mount and command give valid jobs or an error with a
// message.
func FuzzRunImage(f *testing.F) {
	f.Add("nvcr.io/nvidia/pytorch:24.05-py3", "/workspace", "/data:/data:ro", "python")
	f.Add("oci:/var/lib/allot/images/demo:latest", "", "", "")
	f.Add("Team/X", "rel", "/a", "x")
	f.Add("ghcr.io/a/b@sha256:", "/", "/a:/allot/work:rw", "")
	f.Add("", "/w", "a:b:c:d", "sh")
	f.Fuzz(func(t *testing.T, image, workdir, mount, prog string) {
		r := runFlags{gpus: 1, instances: "1", image: image, workdir: workdir}
		if mount != "" {
			r.mounts = []string{mount}
		}
		var command []string
		if prog != "" {
			command = []string{prog}
		}
		if image == "" && len(command) == 0 {
			return // cobra refuses it before runSpecs
		}
		specs, err := runSpecs(r, command)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("error without a message")
			}
			return
		}
		for _, s := range specs {
			s.Tenant = "filled-in-by-the-server"
			if err := s.Validate(); err != nil {
				t.Fatalf("job %+v fails Validate: %v", s, err)
			}
			if image != "" && (s.Container == nil || s.Container.Image != image) {
				t.Fatalf("job %+v lost its image %q", s, image)
			}
		}
	})
}
