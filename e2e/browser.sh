#!/usr/bin/env bash
# Installs the browser the HTML report test renders its pages in (e2e/internal/htmltest
# TestHTMLInBrowser): Debian's chromium package, with apt when missing (needs root). Where it
# cannot be installed (not root, no apt-get, apt fails) it says so and exits 0: the test then
# skips with that reason. Prints the browser's path on stdout when there is one.
set -uo pipefail

log() { echo "browser: $*" >&2; }

for name in chromium chromium-browser google-chrome; do
  if p="$(command -v "$name")"; then echo "$p"; exit 0; fi
done
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  log "no Chromium and cannot install it here (needs root and apt-get): the HTML report's browser test will skip"
  exit 0
fi
start=$SECONDS
log "installing chromium (Debian package)"
export DEBIAN_FRONTEND=noninteractive
aptlog="$(mktemp)"
# The package lists may be missing or stale on a fresh machine: update once, then install.
if ! apt-get install -y -q --no-install-recommends chromium >"$aptlog" 2>&1; then
  if ! { apt-get update -q && apt-get install -y -q --no-install-recommends chromium; } >"$aptlog" 2>&1; then
    tail -20 "$aptlog" >&2
    rm -f "$aptlog"
    log "apt-get install chromium failed: the HTML report's browser test will skip"
    exit 0
  fi
fi
rm -f "$aptlog"
log "installed in $((SECONDS - start))s"
command -v chromium
