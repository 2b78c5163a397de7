#!/usr/bin/env bash
# bench-vs-slurm.sh N J: Slurm and allot side by side on the same fleet size
# and job count, one after the other on this machine.
#
#   1. Slurm 22.05 (Debian's packages): ../shared/peers/slurm/bench.sh with
#      N slurmd (8 GPUs each) on loopback, J one-GPU allocation jobs
#      submitted through libslurm, HOLD=0 (the partition is up while jobs
#      arrive), so its all_running_s runs from the first submit until
#      slurmctld has started every job that fits.
#   2. allot, as two processes beside each other: `allot server --agents
#      simulated` (bolt store in a new temporary data directory, fsync on
#      every commit; the fleet of N 8-GPU H100 nodes that `allot bench e2e
#      --write-fleet` writes; rate limiting and the per-tenant job bound
#      off; logs at --log-level info into a file, as a service would keep
#      them), and, once it answers /readyz, `allot bench e2e --server URL
#      --jobs J` as the HTTP client (ALLOT_CLIENTS connections, one job a
#      request), whose all_running_s runs from its first submit until its
#      listing of the run's jobs finds every one Running. Then the server
#      is stopped and its directory removed. ALLOT_RUNS runs (a few seconds
#      each), each on a fresh server, the median taken. ALLOT_SERVER=
#      in-process runs `allot bench e2e --nodes N --jobs J` instead (server
#      and clients in one process, as this script did before).
#
# Prints one JSON line on stdout:
#   {"nodes":N,"jobs":J,"slurm_jobs_per_s":..,"allot_jobs_per_s":..,"ratio":..,
#    "slurm_all_running_s":..,"allot_all_running_s":..,"allot_runs":3,
#    "allot_server":"external","allot_runs_jobs_per_s":[..],
#    "allot_cpu_per_job_ms":..,"loadavg":".."}
# ratio = allot_jobs_per_s / slurm_jobs_per_s; allot_cpu_per_job_ms is the
# median run's server CPU per job. Progress and each tool's own output go to
# stderr.
#
# Installs what is missing (apt: slurmctld slurmd slurm-client munge bc gcc
# libslurm-dev jq curl; needs root or sudo) and builds allot with the Go on
# PATH. Environment: SLURM_PEER (directory of bench.sh)
# [REPO/../shared/peers/slurm], ALLOT_CLIENTS [16], ALLOT_RUNS [3],
# ALLOT_SERVER [external] (or in-process), ALLOT_LOG_LEVEL [info],
# ALLOT_PROFILE (a directory: each run's server writes a CPU profile
# there), and bench.sh's own knobs (PORT_BASE, MAX_WAIT, KEEP...). Slurm
# resets sdiag's counters at midnight, which bench.sh reads: a run across
# midnight times out; run it again.
set -euo pipefail

usage() { echo "usage: $0 NODES JOBS" >&2; exit 2; }
[ $# -eq 2 ] || usage
N=$1 J=$2
[[ $N =~ ^[1-9][0-9]*$ && $J =~ ^[1-9][0-9]*$ ]] || usage
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEER=${SLURM_PEER:-$ROOT/../shared/peers/slurm}
CLIENTS=${ALLOT_CLIENTS:-16}
RUNS=${ALLOT_RUNS:-3}
MODE=${ALLOT_SERVER:-external}
LOG_LEVEL=${ALLOT_LOG_LEVEL:-info}
PROFILE=${ALLOT_PROFILE:-}
case $MODE in external|in-process) ;; *) echo "ALLOT_SERVER must be external or in-process" >&2; exit 2 ;; esac
log() { echo "[bench-vs-slurm $(date +%T)] $*" >&2; }

[ -f "$PEER/bench.sh" ] || { log "no $PEER/bench.sh (set SLURM_PEER)"; exit 1; }

# ---------------------------------------------------------------- install
missing=()
for b in /usr/sbin/slurmctld-wlm /usr/sbin/slurmd-wlm /usr/sbin/munged scontrol /usr/include/slurm/slurm.h bc gcc jq curl; do
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
    slurmctld slurmd slurm-client munge bc gcc libslurm-dev jq curl >&2
fi
command -v go >/dev/null || { log "go is not on PATH"; exit 1; }

# ---------------------------------------------------------------- build
BIN=$(mktemp -d /tmp/bench-vs-slurm.XXXXXX)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; fi
  rm -rf "$BIN"
}
trap cleanup EXIT
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
# external_run RUN: one run against a fresh `allot server` process; prints
# bench e2e's JSON on stdout.
external_run() {
  local d="$BIN/run$1" url="" i
  "$BIN/allot" bench e2e --nodes "$N" --write-fleet "$d" >/dev/null
  local prof=()
  [ -n "$PROFILE" ] && prof=(--cpuprofile "$PROFILE/server-run$1.pprof")
  "$BIN/allot" server --data "$d/data" --listen 127.0.0.1:0 --agents simulated \
    --fleet "$d/fleet.yaml" --tenants "$d/tenants.yaml" --rate-limit 0 --max-jobs-per-tenant 0 \
    --log-level "$LOG_LEVEL" "${prof[@]}" >"$d/server.out" 2>"$d/server.log" &
  SERVER_PID=$!
  for i in $(seq 1 600); do
    url=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$d/server.out")
    [ -n "$url" ] && curl -sf "$url/readyz" >/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { log "allot server exited: $(tail -3 "$d/server.log")"; return 1; }
    url=; sleep 0.1
  done
  [ -n "$url" ] || { log "allot server did not become ready in 60 s"; return 1; }
  ALLOT_TOKEN=$(cat "$d/data/admin-token") "$BIN/allot" bench e2e --server "$url" --jobs "$J" --clients "$CLIENTS" -o json
  kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || true
  SERVER_PID=
  log "server log: $(wc -l <"$d/server.log") lines"
  rm -rf "$d"
}

# The slurmds are gone once bench.sh returns; let their exit settle, then
# take the median of ALLOT_RUNS runs (a run takes seconds, Slurm's minutes).
sleep 5
runs=() cpus=()
for i in $(seq 1 "$RUNS"); do
  log "allot run $i/$RUNS ($MODE server): $N nodes, $J jobs, $CLIENTS clients (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  if [ "$MODE" = external ]; then
    allot=$(external_run "$i")
  else
    allot=$("$BIN/allot" bench e2e --nodes "$N" --jobs "$J" --clients "$CLIENTS" -o json)
  fi
  jq -c '{server, jobs_per_s, submits_per_s, latency_p50_ms, latency_p99_ms, all_running_s, cpu_per_job_ms,
    client_cpu_per_job_ms, cycles, loadavg_at_start}' <<<"$allot" >&2
  jq -c '.cycle_split | with_entries(.value |= {n: .count, mean: .mean_ms, p99: .p99_ms})' <<<"$allot" >&2
  runs+=("$(jq -r '"\(.jobs_per_s) \(.all_running_s) \(.cpu_per_job_ms)"' <<<"$allot")")
done
median=$(printf '%s\n' "${runs[@]}" | sort -g | awk '{a[NR]=$0} END{print a[int((NR+1)/2)]}')
read -r allot_rate allot_s allot_cpu <<<"$median"
all_rates=$(printf '%s\n' "${runs[@]}" | awk '{print $1}' | jq -sc 'map(.*10|round/10)')

jq -cn --argjson n "$N" --argjson j "$J" --argjson s "$slurm_rate" --argjson a "$allot_rate" \
  --argjson ss "$slurm_s" --argjson at "$allot_s" --argjson runs "$RUNS" --arg mode "$MODE" \
  --argjson rates "$all_rates" --argjson cpu "$allot_cpu" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
  '{nodes:$n, jobs:$j, slurm_jobs_per_s:$s, allot_jobs_per_s:($a*1000|round/1000),
    ratio:(if $s > 0 then ($a/$s*100|round/100) else null end),
    slurm_all_running_s:$ss, allot_all_running_s:($at*1000|round/1000), allot_runs:$runs,
    allot_server:$mode, allot_runs_jobs_per_s:$rates, allot_cpu_per_job_ms:($cpu*1000|round/1000), loadavg:$load}'
