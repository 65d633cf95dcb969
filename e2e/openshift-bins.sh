#!/usr/bin/env bash
# Builds OpenShift's image API server (openshift-apiserver) and an admission webhook running OpenShift's
# ImagePolicy plugin (openshift/apiserver-library-go pkg/admission/imagepolicy) from the Go module
# proxy into a cache keyed by version, each in a throw-away wrapper module (like cluster-bins.sh).
# The sources kept in the repo are under e2e/openshift-src/ (not part of the project's module).
# Prints the bin directory on stdout; a second run with a warm cache takes milliseconds.
# See docs and ../shared notes: most OpenShift versions are refused by the proxy; these are served.
set -euo pipefail

OSAPI_VERSION="${OSAPI_VERSION:-v0.0.0-alpha.0.0.20230503155233-aac3dd5bf054}" # k8s 1.26.2
CACHE="${STSDIAG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stsdiag}"
BIN="$CACHE/bin"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/openshift-src"
# The checksum database lacks several openshift pseudo-versions.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/openshift"
export GOFLAGS=-mod=mod

log() { echo "openshift-bins: $*" >&2; }

build_osapi() {
  local dir="$BIN/openshift-apiserver-$OSAPI_VERSION"
  [[ -x "$dir/openshift-apiserver" ]] && return
  log "building openshift-apiserver $OSAPI_VERSION (cold: ~2-5 min)"
  local start=$SECONDS work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  (
    cd "$work"
    go mod init stsdiag.local/osapibuild >/dev/null 2>&1
    local gomod apiserver
    gomod="$(go mod download -json "github.com/openshift/openshift-apiserver@$OSAPI_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
    # The pinned fork of k8s.io/apiserver is refused: upstream v0.26.2 plus the one method the
    # fork adds that openshift-apiserver calls (e2e/openshift-src/k8s-apiserver).
    apiserver="$(go mod download -json k8s.io/apiserver@v0.26.2 | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
    cp -r "$apiserver" k8s-apiserver && chmod -R u+w k8s-apiserver
    cp "$SRC/k8s-apiserver/removeopenapidata.go.txt" k8s-apiserver/pkg/server/removeopenapidata.go
    {
      echo "require github.com/openshift/openshift-apiserver $OSAPI_VERSION"
      # A dependency's replace directives are not inherited: copy them (all but k8s.io/apiserver).
      sed -n '/^replace (/,/^)/p' "$gomod" | grep '=>' | grep -v '^\s*k8s.io/apiserver ' | sed 's/^\s*/replace /'
      echo "replace k8s.io/apiserver => ./k8s-apiserver"
    } >>go.mod
    cat >tools.go <<'GO'
//go:build tools

package tools

import _ "github.com/openshift/openshift-apiserver/cmd/openshift-apiserver"
GO
    go mod tidy >/dev/null
    mkdir -p "$dir"
    go build -trimpath -ldflags "-s -w" -o "$dir/openshift-apiserver.tmp" github.com/openshift/openshift-apiserver/cmd/openshift-apiserver
    mv "$dir/openshift-apiserver.tmp" "$dir/openshift-apiserver"
  )
  log "openshift-apiserver built in $((SECONDS - start))s"
}

# The webhook's cache key: its plugin's version and a hash of its sources (an edit rebuilds it).
ALG_VERSION="$(sed -n 's|^\s*github.com/openshift/apiserver-library-go \(v[^ ]*\)$|\1|p' "$SRC/webhook/go.mod")"
WEBHOOK_KEY="$ALG_VERSION-$(cat "$SRC/webhook/main.go" "$SRC/webhook/go.mod" "$SRC/webhook/go.sum" | sha256sum | cut -c1-12)"

build_webhook() {
  local dir="$BIN/imagepolicy-webhook-$WEBHOOK_KEY"
  [[ -x "$dir/imagepolicy-webhook" ]] && return
  log "building the ImagePolicy webhook (apiserver-library-go $ALG_VERSION; cold: ~1-3 min)"
  local start=$SECONDS work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  cp "$SRC/webhook/main.go" "$SRC/webhook/go.mod" "$SRC/webhook/go.sum" "$work/"
  mkdir -p "$dir"
  (cd "$work" && go build -trimpath -ldflags "-s -w" -o "$dir/imagepolicy-webhook.tmp" .)
  mv "$dir/imagepolicy-webhook.tmp" "$dir/imagepolicy-webhook"
  log "webhook built in $((SECONDS - start))s"
}

mkdir -p "$BIN"
build_osapi
build_webhook
printf 'OSAPI_BIN=%s\nWEBHOOK_BIN=%s\n' "$BIN/openshift-apiserver-$OSAPI_VERSION" "$BIN/imagepolicy-webhook-$WEBHOOK_KEY"
