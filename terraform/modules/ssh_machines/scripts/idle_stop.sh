#!/bin/bash
# An SSH machine stops itself when idle (docs/operations.md, "Cost"): run every 5 minutes by
# cluster-idle-stop.timer. Busy is any of: an established SSH connection (an interactive login, scp, an editor's
# remote session), a process on a GPU or a GPU above 5% utilisation, a 5-minute load average above 1 (a CPU job in
# tmux). The machine powers off once it was not busy for IDLE_MIN minutes; its EBS root and everything on it stay,
# and `invoke ssh-start NAME` starts it again. The clock starts at boot.
set -euo pipefail

IDLE_MIN=${IDLE_MIN:?}
STATE=${IDLE_STATE:-/var/lib/cluster-idle-stop}
install -d -m 0755 "$STATE"
now=$(date +%s)

busy_reason() {
  local n
  n=$(ss -Htn state established '( sport = :22 )' | wc -l)
  ((n == 0)) || { echo "$n SSH connection(s)"; return; }
  if command -v nvidia-smi >/dev/null; then
    n=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -c . || true)
    ((n == 0)) || { echo "$n GPU process(es)"; return; }
    if nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits | awk '$1 > 5 {found=1} END {exit !found}'; then
      echo "GPU utilisation above 5%"
      return
    fi
  fi
  if awk '$2 > 1.0 {found=1} END {exit !found}' "${LOADAVG:-/proc/loadavg}"; then
    echo "load average $(cut -d' ' -f2 "${LOADAVG:-/proc/loadavg}")"
  fi
}

boot=$(($(date +%s) - $(cut -d. -f1 "${UPTIME:-/proc/uptime}")))
last=$(cat "$STATE/last-busy" 2>/dev/null || echo 0)
((last >= boot)) || last=$boot # a fresh start counts as busy
why=$(busy_reason)
if [[ -n $why ]]; then
  echo "$now" >"$STATE/last-busy"
  echo "busy: $why"
  exit 0
fi
idle=$(((now - last) / 60))
if ((idle >= IDLE_MIN)); then
  echo "idle for $idle min (limit $IDLE_MIN): powering off; invoke ssh-start starts it again"
  logger -t cluster-idle-stop "idle for $idle min: powering off" || true
  systemctl poweroff
else
  echo "idle for $idle min (limit $IDLE_MIN)"
fi
