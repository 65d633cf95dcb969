#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy into a cache keyed by version.
# Each tool is built in a throw-away wrapper module so the project's go.mod stays clean.
# Prints the bin directory on stdout; a second run with a warm cache takes seconds.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
# KUBELET=0 skips the kubelet (only the real-node suite runs one; e2e-versions does not need it).
KUBE_COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler)
[[ "${KUBELET:-1}" == 0 ]] || KUBE_COMPONENTS+=(kubelet)
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
CACHE="${STSDIAG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stsdiag}"
BIN="$CACHE/bin"

log() { echo "cluster-bins: $*" >&2; }

build_kube() {
  local dir="$BIN/kubernetes-$K8S_VERSION" c missing=()
  for c in "${KUBE_COMPONENTS[@]}"; do
    [[ -x "$dir/$c" ]] || missing+=("$c")
  done
  ((${#missing[@]})) || return 0
  log "building ${missing[*]} $K8S_VERSION (cold: ~10 min)"
  local start=$SECONDS work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local staging="v0.${K8S_VERSION#v1.}"
  (
    cd "$work"
    go mod init stsdiag.local/kubebuild >/dev/null 2>&1
    local gomod
    gomod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
    {
      echo "require k8s.io/kubernetes $K8S_VERSION"
      grep -E '^\s*k8s.io/[a-z0-9-]+ => \./staging/' "$gomod" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
    } >>go.mod
    # tools.go first: a tidy without imports would drop the require and resolve @latest instead.
    cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
    go mod tidy >/dev/null
    grep -q "k8s.io/kubernetes $K8S_VERSION" go.mod || { log "go.mod lost k8s.io/kubernetes $K8S_VERSION"; exit 1; }
    local pkg=k8s.io/component-base/version
    local ld="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    mkdir -p "$dir"
    for c in "${missing[@]}"; do
      go build -trimpath -ldflags "$ld" -o "$dir/$c.tmp" "k8s.io/kubernetes/cmd/$c"
      mv "$dir/$c.tmp" "$dir/$c"
    done
  )
  log "kubernetes built in $((SECONDS - start))s"
}

build_etcd() {
  local dir="$BIN/etcd-$ETCD_VERSION"
  [[ -x "$dir/etcd" ]] && return
  log "building etcd $ETCD_VERSION"
  local start=$SECONDS work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  (
    cd "$work"
    go mod init stsdiag.local/etcdbuild >/dev/null 2>&1
    cat >main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1
    go mod tidy >/dev/null
    mkdir -p "$dir.tmp"
    go build -trimpath -ldflags "-s -w" -o "$dir.tmp/etcd" .
  )
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  log "etcd built in $((SECONDS - start))s"
}

build_kwok() {
  local dir="$BIN/kwok-$KWOK_VERSION"
  [[ -x "$dir/kwok" ]] && return
  log "building kwok $KWOK_VERSION"
  local start=$SECONDS
  mkdir -p "$dir.tmp"
  GOBIN="$dir.tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  log "kwok built in $((SECONDS - start))s"
}

mkdir -p "$BIN"
build_etcd
build_kwok
build_kube
for f in "${KUBE_COMPONENTS[@]/#/$BIN/kubernetes-$K8S_VERSION/}" "$BIN/etcd-$ETCD_VERSION/etcd" "$BIN/kwok-$KWOK_VERSION/kwok"; do
  [[ -x "$f" ]] || { log "missing $f"; exit 1; }
done
printf 'KUBE_BIN=%s\nETCD_BIN=%s\nKWOK_BIN=%s\n' "$BIN/kubernetes-$K8S_VERSION" "$BIN/etcd-$ETCD_VERSION" "$BIN/kwok-$KWOK_VERSION"
