#!/usr/bin/env bash
# bench-vs-slurm.sh N J: Slurm and allot side by side on the same fleet size
# and job count, one after the other on this machine.
#
#   1. Slurm 22.05 (Debian's packages): ../shared/peers/slurm/bench.sh with
#      N slurmd (8 GPUs each) on loopback, J one-GPU allocation jobs
#      submitted through libslurm, HOLD=0 (the partition is up while jobs
#      arrive), so its all_running_s runs from the first submit until
#      slurmctld has started every job that fits.
#   2. allot: `allot bench e2e --nodes N --jobs J` (in-process server, bolt
#      store, simulated node layer, J one-GPU jobs through the HTTP API), whose
#      all_running_s runs from the first submit until every job is Running;
#      ALLOT_RUNS runs (a few seconds each), the median taken.
#
# Prints one JSON line on stdout:
#   {"nodes":N,"jobs":J,"slurm_jobs_per_s":..,"allot_jobs_per_s":..,"ratio":..,
#    "slurm_all_running_s":..,"allot_all_running_s":..,"allot_runs":3,"loadavg":".."}
# ratio = allot_jobs_per_s / slurm_jobs_per_s. Progress and each tool's own
# output go to stderr.
#
# Installs what is missing (apt: slurmctld slurmd slurm-client munge bc gcc
# libslurm-dev jq; needs root or sudo) and builds allot with the Go on PATH.
# Environment: SLURM_PEER (directory of bench.sh) [REPO/../shared/peers/slurm],
# ALLOT_CLIENTS [16], ALLOT_RUNS [3], and bench.sh's own knobs (PORT_BASE,
# MAX_WAIT, KEEP...). Slurm resets sdiag's counters at midnight, which
# bench.sh reads: a run across midnight times out; run it again.
set -euo pipefail

usage() { echo "usage: $0 NODES JOBS" >&2; exit 2; }
[ $# -eq 2 ] || usage
N=$1 J=$2
[[ $N =~ ^[1-9][0-9]*$ && $J =~ ^[1-9][0-9]*$ ]] || usage
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEER=${SLURM_PEER:-$ROOT/../shared/peers/slurm}
CLIENTS=${ALLOT_CLIENTS:-16}
RUNS=${ALLOT_RUNS:-3}
log() { echo "[bench-vs-slurm $(date +%T)] $*" >&2; }

[ -f "$PEER/bench.sh" ] || { log "no $PEER/bench.sh (set SLURM_PEER)"; exit 1; }

# ---------------------------------------------------------------- install
missing=()
for b in /usr/sbin/slurmctld-wlm /usr/sbin/slurmd-wlm /usr/sbin/munged scontrol /usr/include/slurm/slurm.h bc gcc jq; do
  case $b in
    /*) [ -e "$b" ] || missing+=("$b") ;;
    *) command -v "$b" >/dev/null || missing+=("$b") ;;
  esac
done
if [ ${#missing[@]} -gt 0 ]; then
  log "missing ${missing[*]}; installing Slurm and its helpers with apt-get"
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge bc gcc libslurm-dev jq >&2
fi
command -v go >/dev/null || { log "go is not on PATH"; exit 1; }

# ---------------------------------------------------------------- build
BIN=$(mktemp -d /tmp/bench-vs-slurm.XXXXXX)
trap 'rm -rf "$BIN"' EXIT
log "building allot"
(cd "$ROOT" && go build -o "$BIN/allot" ./cmd/allot)

# ---------------------------------------------------------------- Slurm
log "Slurm: $N slurmd, $J jobs (load: $(cut -d' ' -f1-3 /proc/loadavg))"
slurm=$(N=$N J=$J G=1 MODE=alloc SUBMIT=api HOLD=0 bash "$PEER/bench.sh" | tail -1)
echo "$slurm" >&2
slurm_rate=$(jq -r '.schedule_jobs_per_s' <<<"$slurm")
slurm_s=$(jq -r '.all_running_s' <<<"$slurm")
if [ "$slurm_s" = null ]; then
  log "Slurm did not start every job within MAX_WAIT; no comparison"
  exit 1
fi

# ---------------------------------------------------------------- allot
# The slurmds are gone once bench.sh returns; let their exit settle, then
# take the median of ALLOT_RUNS runs (a run takes seconds, Slurm's minutes).
sleep 5
rates=() times=()
for i in $(seq 1 "$RUNS"); do
  log "allot run $i/$RUNS: $N nodes, $J jobs, $CLIENTS clients (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  allot=$("$BIN/allot" bench e2e --nodes "$N" --jobs "$J" --clients "$CLIENTS" -o json)
  jq -c '{jobs_per_s, submits_per_s, latency_p50_ms, latency_p99_ms, all_running_s, cpu_per_job_ms, loadavg_at_start}' <<<"$allot" >&2
  rates+=("$(jq -r '.jobs_per_s' <<<"$allot") $(jq -r '.all_running_s' <<<"$allot")")
done
median=$(printf '%s\n' "${rates[@]}" | sort -g | awk '{a[NR]=$0} END{print a[int((NR+1)/2)]}')
allot_rate=${median% *} allot_s=${median#* }

jq -cn --argjson n "$N" --argjson j "$J" --argjson s "$slurm_rate" --argjson a "$allot_rate" \
  --argjson ss "$slurm_s" --argjson at "$allot_s" --argjson runs "$RUNS" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
  '{nodes:$n, jobs:$j, slurm_jobs_per_s:$s, allot_jobs_per_s:($a*1000|round/1000),
    ratio:(if $s > 0 then ($a/$s*100|round/100) else null end),
    slurm_all_running_s:$ss, allot_all_running_s:($at*1000|round/1000), allot_runs:$runs, loadavg:$load}'
