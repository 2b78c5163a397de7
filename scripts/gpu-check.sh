#!/usr/bin/env bash
# scripts/gpu-check.sh [--image] [ALLOT] — allot's real-GPU path on this host, end to end.
#
# Run it as root on a host with NVIDIA GPUs and their driver (nvidia-smi).
# With no argument it builds allot (go build); ALLOT names a built binary.
# It runs, on loopback and in a temporary directory:
#   1. 'allot agent discover': NVML's GPUs (and nvidia-smi's, compared by
#      the gpu package's TestNVMLAgreesWithSMI, and its NVML health read by
#      TestNVMLHealthOnThisHost, when GPU_CHECK_TEST names its test binary:
#      go test -c ./internal/agent/gpu), then '-o fleet' for a one-node
#      fleet of this host;
#   2. 'allot server --agents external' on that fleet and 'allot agent
#      --gpus auto' with a node token, a --health-check of nvidia-smi and
#      NVML's GPU health every 2 s (the node must stay in service), and
#      --job-env LD_LIBRARY_PATH where the host sets it (the driver's
#      libraries may be there rather than in the loader's cache);
#   3. jobs under the agent's per-job uids: one with every GPU, one with one
#      GPU, and two halves of one GPU at once. Each checks that
#      CUDA_VISIBLE_DEVICES names as many of the host's GPUs as it asked for,
#      by UUID, that nvidia-smi answers, and, where python3 with torch is on
#      the host (GPU_CHECK_PYTHON, default the python3 on $PATH), that CUDA
#      sees exactly those GPUs, in that order, and multiplies a matrix on each;
#   4. preemption: a spot job holds 60 % of each GPU's memory, and a
#      standard job that needs as much preempts it and allocates it.
# It prints PASS or FAIL for each check and exits non-zero on any FAIL.
#
# --image runs the jobs of step 3 in containers instead (steps 3 and 4 on
# the host are then left out): the agent runs with --runtime podman (or
# GPU_CHECK_RUNTIME: crun, runc) and --image-dir, and the ranks run from the
# demo image ('allot demo image build': this allot binary, no shell), whose
# 'allot demo gpus' prints what the rank sees. A rank on all GPUs and a
# rank on one GPU must each see exactly their assigned GPUs: as many
# distinct UUIDs in CUDA_VISIBLE_DEVICES, all of this host's, and in its
# /dev exactly the device nodes of those GPUs (nvidiaN, N each GPU's minor
# number as 'allot agent discover' reads it from NVML) and no other GPU's;
# where the host has an NVIDIA CDI spec (/etc/cdi, /var/run/cdi), which
# brings nvidia-smi into the container, 'nvidia-smi -L' in a rank must list
# exactly its GPUs. Needs podman (Debian: apt-get install podman).
#
# GPU_CHECK_GPUS=virtual:2xH100-80GB runs the same steps on declared GPUs
# (no driver needed; the CUDA checks are skipped): a dry run of the script.
# GPU_CHECK_AGENT_ARGS adds arguments to the agent's command line, e.g.
# "--run-as nobody --job-env CUDA_MPS_PIPE_DIRECTORY" to run the jobs as
# clients of an MPS daemon the operator started.
# shellcheck disable=SC2015 # pass never fails: 'A && pass … || fail …' is if-then-else here
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
image_mode=
if [[ ${1:-} == --image ]]; then
	image_mode=1
	shift
fi
tmp=$(mktemp -d /tmp/allot-gpu-check.XXXXXX)
chmod 711 "$tmp" # jobs under other uids pass through to their directories
bin=${1:-}
if [[ -z $bin ]]; then
	CGO_CFLAGS="${CGO_CFLAGS:--O2 -w}" go build -o "$tmp/allot" ./cmd/allot || exit 1
	bin=$tmp/allot
fi
gpus=${GPU_CHECK_GPUS:-auto}
py=${GPU_CHECK_PYTHON:-$(command -v python3 || true)}
failed=0
pass() { echo "PASS  $*"; }
fail() {
	echo "FAIL  $*"
	failed=1
}
pids=()
# podman names a local image after its path, which must be lower-case:
# mktemp's letters are not.
imgdir=/tmp/allot-gpu-check-images-$$-$RANDOM
# shellcheck disable=SC2317 # the EXIT trap calls it
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$imgdir"
	if ((failed)); then echo "logs kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

echo "== discovery"
if [[ $gpus == auto ]]; then
	nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version --format=csv || fail "nvidia-smi"
	if [[ -n ${GPU_CHECK_TEST:-} ]]; then
		"$GPU_CHECK_TEST" -test.run '^TestNVMLAgreesWithSMI$' -test.v && pass "NVML and nvidia-smi agree" || fail "NVML and nvidia-smi disagree"
		"$GPU_CHECK_TEST" -test.run '^TestNVMLHealthOnThisHost$' -test.v && pass "NVML health reads this host" || fail "NVML health"
	fi
fi
"$bin" agent discover --gpus "$gpus" || fail "allot agent discover"
"$bin" agent discover --gpus "$gpus" -o json --node gpu-check-01 >"$tmp/gpus.json" || fail "allot agent discover -o json"
"$bin" agent discover --gpus "$gpus" -o fleet --node gpu-check-01 >"$tmp/fleet.yaml" || fail "allot agent discover -o fleet"
cat "$tmp/fleet.yaml"
count=$(grep -c '"uuid"' "$tmp/gpus.json")
gpu_model=$(grep -m1 '"model"' "$tmp/gpus.json" | sed 's/.*"model": "\(.*\)".*/\1/')
mapfile -t uuids < <(grep '"uuid"' "$tmp/gpus.json" | sed 's/.*"uuid": "\(.*\)".*/\1/')
mapfile -t minors < <(grep '"minor"' "$tmp/gpus.json" | tr -dc '0-9-\n')
((count > 0)) && pass "discovered $count × $gpu_model" || {
	fail "no GPUs discovered"
	exit 1
}

echo "== control plane and agent"
cat >"$tmp/tenants.yaml" <<EOF
partitions:
  - name: local
    tier: internal
    guarantees:
      - {region: local, gpu_model: $gpu_model, gpus: $count}
tenants:
  - {name: check, kind: internal, partition: local}
EOF
port=$((20000 + RANDOM % 20000))
export ALLOT_SERVER=http://127.0.0.1:$port
"$bin" server --data "$tmp/data" --listen "127.0.0.1:$port" --fleet "$tmp/fleet.yaml" --tenants "$tmp/tenants.yaml" \
	--agents external --tick 500ms >"$tmp/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -s $tmp/data/admin-token ]] && "$bin" node list >/dev/null 2>&1 && break; sleep 0.2; done
ALLOT_TOKEN=$(cat "$tmp/data/admin-token")
export ALLOT_TOKEN
(umask 077 && "$bin" token create --node gpu-check-01 >"$tmp/node-token") || fail "node token"
check_token=$("$bin" token create --tenant check) || fail "tenant token"
# Jobs start with a fresh environment: nvidia-smi by its full path, and the
# driver's library path where the host keeps it in LD_LIBRARY_PATH.
smi=$(command -v nvidia-smi || true)
health="$smi >/dev/null"
job_env=()
[[ -n ${LD_LIBRARY_PATH:-} ]] && job_env=(--job-env LD_LIBRARY_PATH)
[[ $gpus == auto ]] || health=true
# shellcheck disable=SC2206 # GPU_CHECK_AGENT_ARGS is split into arguments
extra=(${GPU_CHECK_AGENT_ARGS:-})
if [[ -n $image_mode ]]; then
	command -v podman >/dev/null || {
		fail "--image needs podman (Debian: apt-get install podman)"
		exit 1
	}
	mkdir -m 700 "$imgdir" || exit 1
	image=$("$bin" demo image build --dir "$imgdir/demo" --tag check) && pass "demo image built: $image" || {
		fail "allot demo image build"
		exit 1
	}
	extra+=(--runtime "${GPU_CHECK_RUNTIME:-podman}" --image-dir "$imgdir")
fi
ALLOT_TOKEN='' "$bin" agent --token-file "$tmp/node-token" --node gpu-check-01 --gpus "$gpus" "${job_env[@]}" "${extra[@]}" \
	--data "$tmp/agent" --work "$tmp/work" --heartbeat 1s --health-check "$health" --health-check-every 2s \
	>"$tmp/agent.log" 2>&1 &
pids+=($!)
ready=
for _ in $(seq 100); do
	if "$bin" node list 2>/dev/null | grep -q 'gpu-check-01 .*Ready'; then ready=1 && break; fi
	sleep 0.3
done
[[ -n $ready ]] && pass "agent registered (--gpus $gpus) and its node is Ready" || {
	fail "node not Ready"
	"$bin" node list
	tail -20 "$tmp/agent.log"
	exit 1
}

# The jobs' check: CUDA_VISIBLE_DEVICES names COUNT of the host's GPUs
# (ALL) by UUID, nvidia-smi answers, and CUDA sees those GPUs, in order.
cat >"$tmp/check.py" <<'EOF'
import os, sys, time
host, count = os.environ["ALL"].split(","), int(os.environ["COUNT"])
vis = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
assert len(set(vis)) == count and set(vis) <= set(host), f"CUDA_VISIBLE_DEVICES {vis}: want {count} of {host}"
try:
    import torch
except ImportError:
    print("no torch here: CUDA not checked"); sys.exit(0)
assert torch.cuda.device_count() == count, f"torch sees {torch.cuda.device_count()} GPUs, want {count}"
for i, u in enumerate(vis):
    p = torch.cuda.get_device_properties(i)
    assert "GPU-" + str(p.uuid) == u, f"cuda:{i} is GPU-{p.uuid}, want {u}"
    x = torch.randn(4096, 4096, device=f"cuda:{i}")
    torch.cuda.synchronize(i)
    t = time.perf_counter(); y = x @ x; torch.cuda.synchronize(i)
    free, total = torch.cuda.mem_get_info(i)
    print(f"cuda:{i} {p.name} {u}: 4096x4096 matmul {time.perf_counter() - t:.4f} s, sum {y.sum().item():.3g}, "
          f"{free / 2**30:.1f} of {total / 2**30:.1f} GiB free (ALLOT_GPU_MEMORY_MIB={os.environ.get('ALLOT_GPU_MEMORY_MIB', '')})")
hold = []
if float(os.environ.get("MEM_GIB", "0")) > 0:
    for i in range(count):
        hold.append(torch.empty(int(float(os.environ["MEM_GIB"]) * 2**30), dtype=torch.uint8, device=f"cuda:{i}"))
    torch.cuda.synchronize()
    print(f"holding {os.environ['MEM_GIB']} GiB on each GPU", flush=True)
time.sleep(float(os.environ.get("HOLD", "0")))
print("cuda ok")
EOF
chmod 644 "$tmp/check.py"
if [[ $gpus != auto ]]; then py=; fi
# shellcheck disable=SC2016 # the job's shell expands them
script='echo "uid $(id -u), CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES, ALLOT_GPU_MILLI=${ALLOT_GPU_MILLI:-}"
if [ "$GPUS" = auto ]; then "$SMI" -L || exit 3; fi
if [ -n "$PY" ]; then exec "$PY" '"$tmp/check.py"'; fi
n=$(echo "$CUDA_VISIBLE_DEVICES" | tr , "\n" | sort -u | grep -c .)
test "$n" = "$COUNT" || { echo "CUDA_VISIBLE_DEVICES names $n GPUs, want $COUNT"; exit 5; }
sleep "$HOLD"'
all=$(
	IFS=,
	echo "${uuids[*]}"
)

# submit NAME COUNT HOLD JOB_RUN_FLAGS...: prints the job's ID. MEM_GIB,
# when set, is GPU memory the job holds on each of its GPUs while it waits.
submit() {
	local name=$1 n=$2 hold=$3
	shift 3
	ALLOT_TOKEN=$check_token "$bin" job run --tenant check --name "$name" --gpu-model "$gpu_model" "$@" \
		--env "ALL=$all" --env "COUNT=$n" --env "PY=$py" --env "GPUS=$gpus" --env "SMI=$smi" --env "HOLD=$hold" \
		--env "MEM_GIB=${MEM_GIB:-0}" -- sh -c "$script"
}
# verdict ID WHAT: PASS when the job succeeded, else FAIL; its log either way.
verdict() {
	local id=$1 what=$2
	if "$bin" job wait "$id" --timeout 180s >/dev/null 2>&1; then pass "$what ($id)"; else
		fail "$what ($id)"
		"$bin" job show "$id" | sed 's/^/      /'
	fi
	"$bin" job logs "$id" | sed 's/^/      /'
}

# image_checks: ranks in containers see exactly their assigned GPUs.
image_checks() {
	# The GPU device nodes a rank of these UUIDs must see: nvidiaN, N each
	# GPU's minor number (none for declared GPUs: there is no device).
	expected_nodes() {
		local u i out=()
		[[ $gpus == auto ]] || return 0
		for u in "$@"; do
			for i in "${!uuids[@]}"; do
				[[ ${uuids[$i]} == "$u" ]] && out+=("nvidia${minors[$i]}")
			done
		done
		printf '%s\n' "${out[@]}" | sort -V | paste -sd, -
	}
	# in_container NAME N: a rank of N GPUs from the demo image.
	in_container() {
		local name=$1 n=$2 devices=$2 id log visible seen want
		[[ $gpus == auto ]] || devices=0
		id=$(ALLOT_TOKEN=$check_token "$bin" job run --tenant check --name "$name" --gpu-model "$gpu_model" --gpus "$n" \
			--image "$image" -- allot demo gpus --gpus "$n" --devices "$devices") || {
			fail "submit $name"
			return
		}
		verdict "$id" "a container of $n GPU(s) sees as many GPUs and device nodes"
		log=$("$bin" job logs "$id")
		visible=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' <<<"$log" | head -1)
		seen=$(sed -n 's/^gpu-devices=\([^ ]*\).*/\1/p' <<<"$log" | head -1)
		local -a vis
		IFS=, read -r -a vis <<<"$visible"
		local v ok=1
		for v in "${vis[@]}"; do
			[[ " ${uuids[*]} " == *" $v "* ]] || ok=
		done
		[[ -n $ok && ${#vis[@]} == "$n" ]] && pass "its CUDA_VISIBLE_DEVICES ($visible) names $n of this host's GPUs" ||
			fail "its CUDA_VISIBLE_DEVICES ($visible) is not $n of this host's GPUs (${uuids[*]})"
		want=$(expected_nodes "${vis[@]}")
		[[ $seen == "$want" ]] && pass "its /dev holds the device nodes of those GPUs alone (${seen:-none})" ||
			fail "its /dev holds GPU device nodes '$seen', want '$want' (the minor numbers of $visible)"
	}
	echo "== jobs in containers ($image)"
	in_container img-all-gpus "$count"
	in_container img-one-gpu 1
	if [[ $gpus == auto ]] && { compgen -G '/etc/cdi/nvidia*' >/dev/null || compgen -G '/var/run/cdi/nvidia*' >/dev/null; }; then
		local id lines
		id=$(ALLOT_TOKEN=$check_token "$bin" job run --tenant check --name img-smi --gpu-model "$gpu_model" --gpus 1 \
			--image "$image" -- nvidia-smi -L) || fail "submit img-smi"
		verdict "$id" "nvidia-smi runs in a container (the CDI spec brings it)"
		lines=$("$bin" job logs "$id" | grep -c '^GPU [0-9]*: .*UUID: GPU-')
		[[ $lines == 1 ]] && pass "nvidia-smi -L in a container of one GPU lists one GPU" ||
			fail "nvidia-smi -L in a container of one GPU lists $lines GPUs"
	else
		echo "      no NVIDIA CDI spec on this host: nvidia-smi is not in the containers (checked by device nodes above)"
	fi
}

if [[ -n $image_mode ]]; then
	image_checks
else
	echo "== jobs"
	id=$(submit all-gpus "$count" 0 --gpus "$count") && verdict "$id" "a job on all $count GPUs sees them and no other" || fail "submit all-gpus"
	id=$(submit one-gpu 1 0 --gpus 1) && verdict "$id" "a job on one GPU sees that one alone" || fail "submit one-gpu"
	h1=$(submit half-a 1 15 --gpu-milli 500) || fail "submit half-a"
	h2=$(submit half-b 1 15 --gpu-milli 500) || fail "submit half-b"
	shared=
	for _ in $(seq 60); do
		if [[ $("$bin" job list --state Running 2>/dev/null | grep -c 'half-') == 2 ]]; then shared=1 && break; fi
		sleep 0.5
	done
	[[ -n $shared ]] && pass "two half-GPU jobs run at once" || fail "two half-GPU jobs did not run at once"
	"$bin" job list -o wide | grep -E '^ID|half-' | sed 's/^/      /'
	verdict "$h1" "half a GPU, beside another half"
	verdict "$h2" "the other half"

	# A spot job holds 60 % of each GPU's memory; a standard job that needs as
	# much preempts it, and can only allocate once the spot job's processes,
	# and with them its GPU memory, are gone.
	mem_mib=$(grep -m1 '"memory_mib"' "$tmp/gpus.json" | tr -dc 0-9)
	export MEM_GIB=$((mem_mib * 6 / 10 / 1024))
	[[ -n $py ]] || MEM_GIB=0
	spot=$(submit spot "$count" 600 --gpus "$count" --priority spot) || fail "submit spot"
	for _ in $(seq 120); do
		"$bin" job logs "$spot" 2>/dev/null | grep -q -E 'holding|^uid' && break
		sleep 0.5
	done
	id=$(submit standard "$count" 0 --gpus "$count") &&
		verdict "$id" "a standard job preempts a spot job holding ${MEM_GIB} GiB of each GPU and gets that memory" || fail "submit standard"
	"$bin" job show "$spot" >"$tmp/spot.txt"
	grep -qE '^Preemptions: +[1-9]' "$tmp/spot.txt" && pass "the spot job was preempted ($spot)" || fail "the spot job was not preempted ($spot)"
	grep -E '^(State|Reason|Attempts|Preempt)' "$tmp/spot.txt" | sed 's/^/      spot: /'
	unset MEM_GIB
	"$bin" job cancel "$spot" >/dev/null 2>&1
fi

echo "== health"
# The agent read its health check and (with --gpus auto) the GPUs' NVML
# health every 2 s all along: a healthy host stays undrained.
if "$bin" node show gpu-check-01 | grep -qiE '^Drain'; then
	fail "the node was drained: $("$bin" node show gpu-check-01 | grep -iE '^Drain')"
else
	pass "health checks (--health-check and GPU health) keep the node in service"
fi
grep -E 'not watched|GPU health not read|health check failed' "$tmp/agent.log" | sed 's/^/      /'

echo "== agent log (last lines)"
tail -5 "$tmp/agent.log" | sed 's/^/      /'
((failed)) && echo "FAIL" || echo "PASS: allot's real-GPU path works on this host"
exit $failed
