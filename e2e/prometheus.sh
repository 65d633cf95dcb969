#!/usr/bin/env bash
# Installs Debian's prometheus package (prometheus 2.42 and promtool) with apt when missing (needs
# root): promtool checks and unit-tests the shipped alerts (deploy/promtool_test.go, make unit),
# and the fleet suite (make e2e-fleet) runs Prometheus servers of its own. The package enables a
# systemd unit, a packaged server on :9090 nothing here uses: it is disabled. Where it cannot be
# installed (not root, no apt-get, apt fails) it says so and exits 0 (exit 1 with REQUIRED=1): the
# promtool tests then skip with that reason. Prints promtool's path on stdout when there is one.
set -uo pipefail

log() { echo "prometheus: $*" >&2; }
fail() { log "$*"; [[ "${REQUIRED:-}" == 1 ]] && exit 1; exit 0; }

if [[ -x /usr/bin/promtool && -x /usr/bin/prometheus ]]; then echo /usr/bin/promtool; exit 0; fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  fail "no promtool and cannot install Debian's prometheus here (needs root and apt-get): the promtool tests will skip"
fi
start=$SECONDS
log "installing prometheus (Debian package)"
export DEBIAN_FRONTEND=noninteractive
aptlog="$(mktemp)"
# The package lists may be missing or stale on a fresh machine: update once, then install.
if ! apt-get install -y -q --no-install-recommends prometheus >"$aptlog" 2>&1; then
  if ! { apt-get update -q && apt-get install -y -q --no-install-recommends prometheus; } >"$aptlog" 2>&1; then
    tail -20 "$aptlog" >&2
    rm -f "$aptlog"
    fail "apt-get install prometheus failed: the promtool tests will skip"
  fi
fi
rm -f "$aptlog"
if command -v systemctl >/dev/null && systemctl is-enabled --quiet prometheus 2>/dev/null; then
  systemctl disable --now prometheus >/dev/null 2>&1 || systemctl disable prometheus >/dev/null 2>&1 || true
fi
log "installed in $((SECONDS - start))s"
echo /usr/bin/promtool
