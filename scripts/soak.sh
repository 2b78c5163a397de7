#!/usr/bin/env bash
# scripts/soak.sh DURATION — the control plane under random faults.
#
# Runs three allot servers on a three-member etcd (in-process, loopback)
# under a steady submit load for DURATION (e.g. 10m), injecting a random
# fault every few seconds: the leader killed (SIGKILL) or stalled
# (SIGSTOP), an etcd member stopped, the leader partitioned from etcd,
# slow links, dropped connections. Then it reads the whole history back
# from etcd and checks it (package internal/history): no acknowledged job
# lost, no GPU bound twice, no gang partly bound, no stopped attempt run
# again, no Plan committed outside the leader's term. It prints the counts
# and the verdict, and exits non-zero on FAIL.
#
# ALLOT_SOAK_SEED=N repeats a run's order of faults (the seed is printed).
set -euo pipefail
if [[ $# -ne 1 ]]; then
	echo "usage: scripts/soak.sh DURATION   (e.g. 10m)" >&2
	exit 2
fi
cd "$(dirname "$0")/.."
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -w}"
export ALLOT_SOAK="$1"
log=$(mktemp -t allot-soak.XXXXXX)
echo "full log: $log" >&2
go test -count=1 -run '^TestSoak$' -timeout 0 -v ./internal/e2e/ >"$log" 2>&1 || true
grep -E 'soak: |^(--- |FAIL|ok|PASS)|history check|lost \[|rev [0-9]+:' "$log" | sed 's/^ *[a-z_]*_test.go:[0-9]*: //'
grep -q '^--- PASS: TestSoak' "$log"
