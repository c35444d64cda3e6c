#!/usr/bin/env bash
# What this machine's hardware needs, read from the PCI bus: one image serves every instance type, so the
# fabric manager and EFA are installed where the spec has such types and activated only where the hardware is.
#   gpu-hardware.sh                 (bake / Chef) install this script as /usr/local/sbin/cluster-gpu-hardware
#   cluster-gpu-hardware nvswitch   exit 0 when an NVSwitch is present (the fabric manager unit's ExecCondition)
#   cluster-gpu-hardware efa        exit 0 when an EFA device is present
#   cluster-gpu-hardware gpus       print the number of NVIDIA GPUs
# SYSFS_ROOT (default /sys) lets the tests point it at a fake PCI tree.
set -euo pipefail
sysfs="${SYSFS_ROOT:-/sys}"

# Prints one line per PCI function: "vendor device class".
pci_functions() {
  local dev
  for dev in "$sysfs"/bus/pci/devices/*; do
    [[ -r "$dev/vendor" ]] || continue
    echo "$(<"$dev/vendor") $(<"$dev/device") $(<"$dev/class")"
  done
}

count() {
  # NVIDIA (0x10de): display controllers (class 0x03xxxx) are GPUs, "bridge, other" (0x0680xx) are NVSwitches.
  # Amazon (0x1d0f) devices 0xefa0-0xefa3 are EFA generations 1-4.
  pci_functions | awk -v what="$1" '
    what == "gpus" && $1 == "0x10de" && $3 ~ /^0x03/ { n++ }
    what == "nvswitch" && $1 == "0x10de" && $3 ~ /^0x0680/ { n++ }
    what == "efa" && $1 == "0x1d0f" && $2 ~ /^0xefa[0-3]$/ { n++ }
    END { print n + 0 }'
}

case "${1:-install}" in
  install)
    install -m 0755 "$0" /usr/local/sbin/cluster-gpu-hardware
    ;;
  gpus) count gpus ;;
  nvswitch | efa)
    n=$(count "$1")
    echo "$1: $n"
    ((n > 0))
    ;;
  *)
    echo "usage: $0 [install|gpus|nvswitch|efa]" >&2
    exit 2
    ;;
esac
