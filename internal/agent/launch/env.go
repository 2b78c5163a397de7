package launch

import (
	"cmp"
	"sort"
	"strconv"
	"strings"
)

// BaseEnv is where every attempt's environment starts: a PATH of the
// system's binary directories, a UTF-8 locale that needs no locale files,
// and HOME (set by Environ to the attempt's working directory). Nothing of
// the agent's own environment reaches a job: it may hold the agent's token
// or the host's secrets. A job that needs more sets it in its spec's env.
var BaseEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LANG=C.UTF-8",
}

// Environ is the environment of the attempt: BaseEnv and HOME=s.Dir, then
// the job's own variables, then allot's ALLOT_* and CUDA_* variables, which
// win. A fraction of a GPU gets ALLOT_GPU_MILLI and, where the GPU's memory
// is known, ALLOT_GPU_MEMORY_MIB (its share), with the MPS variables that
// hold a client to both when an MPS daemon runs. A variable allot owns but
// does not set for this attempt (say ALLOT_RESUME_FROM on a first attempt)
// is removed even when the job sets it. allot never adds a token: a job
// that calls the API brings its own tenant's token in its env.
func Environ(s Spec) []string {
	env := map[string]string{}
	for _, kv := range BaseEnv {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if s.Dir != "" {
		env["HOME"] = s.Dir
	}
	for k, v := range s.Env {
		env[k] = v
	}
	for _, k := range []string{"ALLOT_RESUME_FROM", "ALLOT_RANK", "ALLOT_WORLD_SIZE", "ALLOT_MASTER_ADDR",
		"ALLOT_MASTER_PORT", "ALLOT_GPU_MILLI", "ALLOT_ARRAY_INDEX", "ALLOT_GPU_MEMORY_MIB"} {
		delete(env, k)
	}
	env["CUDA_VISIBLE_DEVICES"] = strings.Join(s.GPUs, ",")
	env["ALLOT_JOB_ID"] = s.JobID
	env["ALLOT_ATTEMPT"] = strconv.Itoa(s.Attempt)
	env["ALLOT_CHECKPOINT_DIR"] = s.CheckpointDir
	env["ALLOT_JOB_CHECKPOINT_DIR"] = cmp.Or(s.JobCheckpointDir, s.CheckpointDir)
	if s.ResumeFrom != "" {
		env["ALLOT_RESUME_FROM"] = s.ResumeFrom
	}
	if s.ArrayIndex != nil {
		env["ALLOT_ARRAY_INDEX"] = strconv.Itoa(*s.ArrayIndex)
	}
	if s.WorldSize > 1 {
		env["ALLOT_RANK"] = strconv.Itoa(s.Rank)
		env["ALLOT_WORLD_SIZE"] = strconv.Itoa(s.WorldSize)
		env["ALLOT_MASTER_ADDR"] = s.MasterAddr
		env["ALLOT_MASTER_PORT"] = strconv.Itoa(s.MasterPort)
	}
	if s.GPUMilli > 0 && s.GPUMilli < 1000 {
		env["ALLOT_GPU_MILLI"] = strconv.FormatInt(s.GPUMilli, 10)
		// MPS caps the share of SMs a client may use, in percent.
		env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = strconv.FormatInt(max(1, s.GPUMilli/10), 10)
		if budget := s.GPUMemoryMiB * s.GPUMilli / 1000; budget > 0 {
			// The fraction's share of the GPU's memory: advice the job may
			// follow (torch.cuda.set_per_process_memory_fraction, a
			// server's memory flag), and a limit under an MPS daemon.
			env["ALLOT_GPU_MEMORY_MIB"] = strconv.FormatInt(budget, 10)
			env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = "0=" + strconv.FormatInt(budget, 10) + "M"
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
