#!/usr/bin/env bash
# Builds the Kubernetes binaries that internal/kube's tests and the
# kube-scheduler comparison run against: kube-apiserver, etcd and
# kube-scheduler, from the tools module tools/kube (its own go.mod, never
# imported by allot). They land in ALLOT_KUBE_ASSETS (default
# ~/.cache/allot/kube/v1.34.4); a binary already there is not built again, so
# only the first run pays the compile (about 4-6 min on 2 cores).
#
#   scripts/kube-assets.sh            # build what is missing, print the folder
#   export KUBEBUILDER_ASSETS=$(scripts/kube-assets.sh)
set -euo pipefail
cd "$(dirname "$0")/../tools/kube"
version=v1.34.4
dir=${ALLOT_KUBE_ASSETS:-$HOME/.cache/allot/kube/$version}
mkdir -p "$dir"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
build() { # build NAME PACKAGE
    if [ -x "$dir/$1" ]; then
        return
    fi
    echo "kube-assets: building $1 ($2) into $dir" >&2
    go build -trimpath -ldflags "$ldflags" -o "$dir/$1.tmp" "$2"
    mv "$dir/$1.tmp" "$dir/$1"
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
if [ "${ALLOT_KUBE_SCHEDULER:-1}" = 1 ]; then
    build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
fi
echo "$dir"
