#!/usr/bin/env bash
# Prepares this machine for the real-node suite (make e2e-node): the distribution's container
# runtime, runc, CNI plugins, iptables, conntrack and Prometheus (installed with apt when missing;
# needs root), then the control plane and the kubelet of its release (e2e/cluster-bins.sh, cached
# by version). The suite runs its own Prometheus processes (e2e/node/prometheus_test.go), never
# the packaged service.
# The images the node runs are built by the suite itself from e2e/internal/cluster/nodeimages.
# Prints cluster-bins.sh's KEY=path lines on stdout.
set -euo pipefail

log() { echo "node-bins: $*" >&2; }

PACKAGES=(containerd runc containernetworking-plugins iptables conntrack prometheus)
# The file each package provides, to tell whether it is installed without asking dpkg per name.
need=()
for p in "${PACKAGES[@]}"; do
  case "$p" in
    containerd) f=/usr/bin/containerd ;;
    runc) f=/usr/sbin/runc ;;
    containernetworking-plugins) f=/usr/lib/cni/bridge ;;
    iptables) f=/usr/sbin/iptables ;;
    conntrack) f=/usr/sbin/conntrack ;;
    prometheus) f=/usr/bin/prometheus ;;
  esac
  [[ -x "$f" ]] || need+=("$p")
done
if ((${#need[@]})); then
  [[ $(id -u) == 0 ]] || { log "error: ${need[*]} missing and not root: install them with apt-get"; exit 1; }
  start=$SECONDS
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  aptlog="$(mktemp)"
  # The package lists may be missing or stale on a fresh machine: update once, then install.
  if ! apt-get install -y -q --no-install-recommends "${need[@]}" >"$aptlog" 2>&1; then
    if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${need[@]}"; } >"$aptlog" 2>&1; then
      cat "$aptlog" >&2
      rm -f "$aptlog"
      log "error: apt-get install ${need[*]} failed"
      exit 1
    fi
  fi
  rm -f "$aptlog"
  log "installed in $((SECONDS - start))s"
fi
# Debian's policy-rc.d keeps the packaged containerd from starting; if a service manager started
# it anyway, it is left alone: the suite runs its own instance with its own socket and state.
for f in /usr/bin/containerd /usr/bin/containerd-shim-runc-v2 /usr/bin/ctr /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback /usr/bin/prometheus; do
  [[ -x "$f" ]] || { log "error: $f missing after install"; exit 1; }
done
# The prometheus package enables its systemd unit (and starts it where a service manager runs and
# no policy-rc.d forbids it): a packaged server on :9090 the suite does not use. Stop and disable
# it; without systemd (a container, a VM without it as PID 1) there is nothing to stop.
if [[ $(id -u) == 0 ]] && command -v systemctl >/dev/null; then
  if systemctl is-enabled --quiet prometheus 2>/dev/null || systemctl is-active --quiet prometheus 2>/dev/null; then
    log "disabling the packaged prometheus service"
    systemctl disable --now prometheus >/dev/null 2>&1 || systemctl disable prometheus >/dev/null 2>&1 || true
  fi
fi
exec "$(dirname "$0")/cluster-bins.sh"
