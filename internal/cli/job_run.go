package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// runFlags are the fields of a job that 'job run' takes as flags.
type runFlags struct {
	name, tenant, priority, array, cpu, memory, duration, key, begin, timeout string
	afterCondition, instances, image, workdir                                 string
	mounts                                                                    []string
	maxRetries                                                                int
	gpus                                                                      int
	gpuMilli                                                                  int64
	models, regions, env, sets, after, nodes, exclude                         []string
	now                                                                       time.Time // what a relative --begin counts from
	wait                                                                      waitOption
}

// runFlagOf names the flag that sets a field of the job document, for
// errors.
var runFlagOf = map[string]string{
	"name": "--name", "tenant": "--tenant", "priority": "--priority", "array": "--array", "duration": "--duration",
	"resources.gpus_per_instance": "--gpus", "resources.instance_count": "--instances", "resources.gpu_milli": "--gpu-milli",
	"resources.cpu": "--cpu", "resources.memory": "--memory", "resources.gpu_models": "--gpu-model",
	"placement.regions": "--region", "placement.nodes": "--node", "placement.exclude_nodes": "--exclude", "env": "--env", "command": "the command", "resources": "--gpus or --cpu",
	"elastic": "--instances", "elastic.min_instances": "--instances", "elastic.max_instances": "--instances", "elastic.step": "--instances",
	"begin": "--begin", "retry.timeout": "--timeout", "retry.max_retries": "--max-retries", "after": "--after", "after_condition": "--after-condition",
	"image": "--image", "workdir": "--workdir", "mounts": "--mount",
}

func newJobRunCmd(conn *connection) *cobra.Command {
	var r runFlags
	cmd := &cobra.Command{
		Use:   "run [--gpus N] [--gpu-model M] [--instances N|A-B[:STEP]] [--tenant T] [--name N] [--priority P] [--array A-B[:STEP]] [--image IMG] -- CMD [ARG]...",
		Short: "Submit a command as a job, without a job file",
		Long: `run submits CMD with its arguments as a job, as sbatch --wrap or az ml job
create do, and prints the new job's ID like 'job submit'. The flags set the
fields of a job file: --gpus (gpus_per_instance, default 1), --gpu-model
(gpu_models; repeat it or give a list for several), --instances (a number,
or a range A-B[:STEP] for an elastic job, below), --gpu-milli,
--cpu, --memory, --region, --node (the only nodes it may run on, as a
Kubernetes node affinity by name), --exclude (nodes it must not run on, as
sbatch --exclude), --priority (spot, standard or reserved, with an optional :N),
--duration, --timeout (the time limit of an attempt, as sbatch
--time), --max-retries, --begin (the earliest start: a time, a date, or a
duration from now, as sbatch --begin), --after ID (a step of a pipeline: it
waits Blocked until that job succeeded, as --dependency=afterok; with
--after-condition any until it ended however, as afterany, a clean-up step;
with notok until it ended without succeeding, as afternotok; or per job,
--after any:ID, as --dependency=afterany:ID), --env
NAME=VALUE, and --set for any other field (checkpoint.grace=2m). --name
defaults to the program's name (the image's, without a command); --tenant
to the token's tenant (an admin token must give it).

--image IMG runs the command in a container of the image (an OCI
reference such as ghcr.io/team/train:1.4, or oci:/PATH[:TAG] on the
agents' disk), as the image field of a job file: CMD replaces the image's
entrypoint, and without CMD the image's entrypoint runs. --workdir sets
the container's working directory, --mount SOURCE:TARGET[:ro] mounts a
host directory the agents' operator allows (repeatable). The job's work
directory is /allot/work and its checkpoints /allot/checkpoints
($ALLOT_CHECKPOINT_DIR).

--array A-B[:STEP] submits the command once per index of the range (or of
a list, 1,5,9; at most 1000), all or none: the jobs are named NAME[IDX] and
each finds its index in $ALLOT_ARRAY_INDEX.

--instances A-B makes an elastic gang, as torchrun --nnodes A:B: it waits
for A instances and starts with them, may grow up to B into capacity
nothing else uses and shrinks back (never below A) before anything of it is
evicted; :STEP grows and shrinks it STEP instances at a time (A-B:2; STEP
must divide B-A). Each resize ends the attempt and starts the next from the
job's last checkpoint with the new $ALLOT_WORLD_SIZE, so the program must
checkpoint and resume with any world size (elastic in a job file).

--wait then follows the job until it ended, as sbatch --wait does ('allot
job wait'): its progress on stderr, exit status 0 only when it succeeded.
--dry-run submits nothing and says what would become of the job now, as
sbatch --test-only does (see 'job submit --help'). --attach prints the job's
log as it runs instead of its ID, attempt after attempt (a retry's, a
resumed one's), as srun does, and exits with the status its program exited
with (0 when it succeeded; 1 when it ended without one, e.g. cancelled).

Everything after the first argument that is not a flag (or after --) is
the command. A job without a shell runs the program directly; for pipes
and variables, run sh -c '...'.`,
		Example: `  allot job run --gpus 8 --gpu-model H100 -- torchrun --nproc-per-node 8 train.py
  allot job run --gpu-milli 250 --gpu-model T4 --name notebook -- allot demo serve
  allot job run --gpus 0 --cpu 2 --memory 4Gi -- python preprocess.py
  allot job run --instances 2-8 --gpus 8 --gpu-model H100 -- allot demo train --elastic   # 2 to 8 nodes
  allot job run --array 0-99 --gpus 1 -- sh -c 'python sweep.py --seed $ALLOT_ARRAY_INDEX'
  allot job run --tenant research --priority spot:5 -o json -- python eval.py   # {"id": "..."}
  allot job run --gpus 8 --exclude eastus-h100-03 -- python train.py          # not on that host
  allot job run --gpus 8 --image nvcr.io/nvidia/pytorch:24.05-py3 -- torchrun --nproc-per-node 8 train.py
  allot job run --gpus 1 --image ghcr.io/team/eval:2.1 --mount /data/sets:/data:ro   # the image's entrypoint
  allot job run --gpus 8 --node eastus-h100-03 --attach -- nvidia-smi          # on that host only
  allot job run --begin 2026-12-24T02:00:00Z --gpus 8 -- python nightly.py
  allot job run --begin 6h --gpus 8 -- python nightly.py                     # six hours from now
  allot job run --attach --gpu-milli 250 -- python -c 'print("hello")'       # its output, then its exit status
  allot job run --after "$(allot job run -- python prepare.py)" --gpus 8 -- python train.py
  allot job run --after "$TRAIN" --after-condition any --gpus 0 --cpu 1 -- python cleanup.py
  allot job run --after "$TRAIN" --after-condition notok --gpus 0 --cpu 1 -- python page-oncall.py`,
		Args: func(cmd *cobra.Command, args []string) error {
			if r.image != "" {
				return nil // the image's entrypoint runs
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			r.now = time.Now()
			specs, err := runSpecs(r, args)
			if err != nil {
				return Usage(err)
			}
			return submitJobs(cmd, cl, f, specs, r.key, r.wait)
		},
	}
	cmd.Flags().SetInterspersed(false) // flags after the command are the command's
	fl := cmd.Flags()
	fl.IntVar(&r.gpus, "gpus", 1, "GPUs per instance (0: a CPU-only job, which needs --cpu)")
	fl.StringSliceVar(&r.models, "gpu-model", nil, "acceptable GPU models, e.g. H100 (repeatable, or a list)")
	fl.StringVar(&r.instances, "instances", "1", "instances of the job (a gang when more than one), or A-B[:STEP] for an elastic gang of A to B")
	fl.Int64Var(&r.gpuMilli, "gpu-milli", 0, "a fraction of one GPU in milli-GPU, e.g. 250")
	fl.StringVar(&r.cpu, "cpu", "", "CPU per instance: cores or milli-cores, e.g. 2 or 500m")
	fl.StringVar(&r.memory, "memory", "", "memory per instance, e.g. 8Gi or 512Mi")
	fl.StringSliceVar(&r.regions, "region", nil, "allowed regions (repeatable, or a list)")
	fl.StringSliceVar(&r.nodes, "node", nil, "the only nodes the job may run on, e.g. a host to burn in (repeatable, or a list)")
	fl.StringSliceVar(&r.exclude, "exclude", nil, "nodes the job must not run on, as sbatch --exclude (repeatable, or a list)")
	fl.StringVar(&r.tenant, "tenant", "", "the job's tenant (default: the token's)")
	fl.StringVar(&r.name, "name", "", "the job's name (default: the program's name)")
	fl.StringVar(&r.priority, "priority", "", "priority class: spot, standard or reserved, optionally :N (default standard)")
	fl.StringVar(&r.duration, "duration", "", "estimated run time, e.g. 2h")
	fl.StringVar(&r.timeout, "timeout", "", "time limit of each attempt, as sbatch --time: past it the job is stopped and ends TimedOut, e.g. 4h (retry.timeout)")
	fl.IntVar(&r.maxRetries, "max-retries", 0, "attempts that may fail before the job does, each after a back-off (retry.max_retries)")
	fl.StringSliceVar(&r.after, "after", nil, "start only once these jobs (IDs) succeeded, as sbatch --dependency=afterok (repeatable, or a list; any:ID or notok:ID sets one's own condition)")
	fl.StringVar(&r.afterCondition, "after-condition", "", "what --after waits for: ok (succeeded, the default), any (ended, as afterany) or notok (ended without succeeding, as afternotok)")
	fl.StringVar(&r.begin, "begin", "", "start no earlier than this: a time (2026-12-24T02:00:00Z), a date, or a duration from now (6h)")
	fl.StringVar(&r.array, "array", "", "submit once per index: A-B[:STEP] or a list (1,5,9), at most 1000")
	fl.StringArrayVar(&r.env, "env", nil, "an environment variable NAME=VALUE (repeatable)")
	fl.StringVar(&r.image, "image", "", "run in a container of this image: an OCI reference (REGISTRY/REPO:TAG or @sha256:…) or oci:/PATH[:TAG]")
	fl.StringVar(&r.workdir, "workdir", "", "with --image: the container's working directory (default the image's)")
	fl.StringArrayVar(&r.mounts, "mount", nil, "with --image: a host directory SOURCE:TARGET[:ro] the agents allow (repeatable)")
	fl.StringArrayVar(&r.sets, "set", nil, "set any other field of the job, key=value, e.g. retry.max_retries=3 (repeatable)")
	fl.StringVar(&r.key, "idempotency-key", "", idempotencyHelp)
	r.wait.register(cmd)
	return cmd
}

// runSpecs builds the job 'job run' submits, as a job document read by
// package spec (so units, defaults, arrays and validation are those of a
// job file), and names the flag of each problem.
func runSpecs(r runFlags, command []string) ([]model.JobSpec, error) {
	doc := map[string]any{}
	if len(command) > 0 {
		doc["command"] = command
	}
	name := r.name
	switch {
	case name != "":
	case len(command) > 0:
		name = filepath.Base(command[0])
	default:
		name = imageName(r.image)
	}
	doc["name"] = name
	if r.image != "" {
		doc["image"] = r.image
	}
	if r.workdir != "" {
		doc["workdir"] = r.workdir
	}
	if len(r.mounts) > 0 {
		doc["mounts"] = r.mounts
	}
	// Without --tenant the server fills in the token's tenant; the
	// placeholder only lets the document be checked here.
	const anyTenant = "-"
	doc["tenant"] = anyTenant
	if r.tenant != "" {
		doc["tenant"] = r.tenant
	}
	res := map[string]any{"gpus_per_instance": r.gpus}
	switch n, el, err := parseInstances(r.instances); {
	case err != nil:
		return nil, fmt.Errorf("--instances %q: %w", r.instances, err)
	case el != nil:
		doc["elastic"] = el // instance_count is its minimum
	default:
		res["instance_count"] = n
	}
	if r.gpuMilli != 0 {
		res["gpu_milli"] = r.gpuMilli
	}
	if len(r.models) > 0 {
		res["gpu_models"] = r.models
	}
	if r.cpu != "" {
		res["cpu"] = r.cpu
	}
	if r.memory != "" {
		res["memory"] = r.memory
	}
	doc["resources"] = res
	pl := map[string]any{}
	for key, list := range map[string][]string{"regions": r.regions, "nodes": r.nodes, "exclude_nodes": r.exclude} {
		if len(list) > 0 {
			pl[key] = list
		}
	}
	if len(pl) > 0 {
		doc["placement"] = pl
	}
	if r.priority != "" {
		doc["priority"] = r.priority
	}
	if r.duration != "" {
		doc["duration"] = r.duration
	}
	if r.timeout != "" || r.maxRetries != 0 {
		retry := map[string]any{}
		if r.timeout != "" {
			retry["timeout"] = r.timeout
		}
		if r.maxRetries != 0 {
			retry["max_retries"] = r.maxRetries
		}
		doc["retry"] = retry
	}
	if len(r.after) > 0 {
		doc["after"] = r.after
	}
	if r.afterCondition != "" {
		doc["after_condition"] = r.afterCondition
	}
	if r.begin != "" {
		b, err := beginTime(r.begin, r.now)
		if err != nil {
			return nil, err
		}
		if b != "" {
			doc["begin"] = b
		}
	}
	if r.array != "" {
		if _, err := model.ParseArray(r.array); err != nil {
			return nil, fmt.Errorf("--array: %w", err)
		}
		doc["array"] = r.array
	}
	if len(r.env) > 0 {
		env := map[string]string{}
		for _, kv := range r.env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--env %q: want NAME=VALUE", kv)
			}
			env[k] = v
		}
		doc["env"] = env
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	specs, err := spec.ParseJobs("job run", data, r.sets)
	if err != nil {
		return nil, flagErrors(err)
	}
	if r.tenant == "" {
		for i := range specs {
			if specs[i].Tenant == anyTenant {
				specs[i].Tenant = ""
			}
		}
	}
	return specs, nil
}

// imageName is the name of a job that runs an image's entrypoint: the
// last component of its repository, without tag or digest ("train" of
// ghcr.io/team/train:1.4).
func imageName(image string) string {
	name, _, _ := strings.Cut(image, "@")
	name = name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.IndexByte(name, ':'); i > 0 {
		name = name[:i]
	}
	if name == "" {
		return "image"
	}
	return name
}

// parseInstances reads --instances: a count N, or an elastic range A-B or
// A-B:STEP, returned as a job file's elastic block.
func parseInstances(s string) (n int, elastic map[string]int, err error) {
	num := func(t string) (int, error) {
		v, err := strconv.Atoi(t)
		if err != nil || t == "" || t[0] == '+' || t[0] == '-' {
			return 0, errors.New("want a count (4), or a range of instances for an elastic job: A-B or A-B:STEP (2-8:2)")
		}
		return v, nil
	}
	lo, rest, isRange := strings.Cut(s, "-")
	if !isRange {
		n, err := num(s)
		return n, nil, err
	}
	hi, step, stepped := strings.Cut(rest, ":")
	el := map[string]int{}
	for _, f := range []struct {
		key, text string
		set       bool
	}{{"min_instances", lo, true}, {"max_instances", hi, true}, {"step", step, stepped}} {
		if !f.set {
			continue
		}
		v, err := num(f.text)
		if err != nil {
			return 0, nil, err
		}
		el[f.key] = v
	}
	return 0, el, nil
}

// flagErrors rewrites the problems of the job document in terms of the
// flags that set its fields, one per line.
func flagErrors(err error) error {
	list := spec.Errors(err)
	if len(list) == 0 {
		return err
	}
	lines := make([]string, len(list))
	for i, e := range list {
		where := e.Field
		if strings.HasPrefix(e.File, "--set ") {
			where = e.File
		} else if f, ok := runFlagOf[e.Field]; ok {
			where = f
		} else if base, _, ok := strings.Cut(e.Field, "["); ok && runFlagOf[base] != "" {
			where = runFlagOf[base]
		} else if strings.HasPrefix(e.Field, "env.") {
			where = "--env " + strings.TrimPrefix(e.Field, "env.")
		}
		if where == "" {
			lines[i] = e.Msg
		} else {
			lines[i] = where + ": " + e.Msg
		}
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}
