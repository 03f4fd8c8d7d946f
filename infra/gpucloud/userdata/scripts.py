"""The fixed text the agent bundle installs: the agent's launcher, the storage and CloudWatch
set-up scripts and the systemd units. No value of a stack reaches them; those travel in the data
files `render` writes into the user data."""

from __future__ import annotations

from gpucloud.userdata.layout import (
    AGENT_COMMAND_PATH,
    CLOUDWATCH_SCRIPT_PATH,
    CLOUDWATCH_SETUP_TIMEOUT_SECONDS,
    CLOUDWATCH_UNIT,
    COLLECT_UNIT,
    DRAIN_UNIT,
    GATE_TIMEOUT_SECONDS,
    GATE_UNIT,
    STORAGE_SCRIPT_PATH,
    STORAGE_TIMEOUT_SECONDS,
    STORAGE_UNIT,
    TUNE_UNIT,
    WATCH_UNIT,
)

AGENT_COMMAND = """\
#!/bin/sh
# The gpu-cloud node agent, unpacked from the agent bundle into /opt/gpucloud/lib, run on the
# image's own Python (the one the bootstrap stub checked for boto3).
PYTHONPATH=/opt/gpucloud/lib${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
exec /usr/bin/python3 -m gpucloud.node "$@"
"""

STORAGE_SCRIPT = """\
#!/bin/bash
# Prepares /scratch (instance store), /data (per-instance EBS) and /persist (the group's
# EBS volume). Runs at every boot; a disk that already holds anything is never formatted.
set -uo pipefail
# shellcheck source=/dev/null
. "${GPUCLOUD_BOOTSTRAP_ENV:-/etc/gpucloud/bootstrap.env}"

log() { echo "gpucloud-storage: $*" >&2; }

format_if_blank() {
  # Formats only what is certainly blank: a block device where blkid -p finds no signature AND
  # whose first MiB reads back as zeros. blkid also exits 2 when it cannot open or probe the
  # device, so a transient read error must not be taken for a blank disk.
  [ -b "$1" ] || { log "$1 is not a block device; leaving it alone"; return 1; }
  local status=0
  blkid -p "$1" >/dev/null 2>&1 || status=$?
  case "$status" in
    0) log "$1 already holds a filesystem or partition table; not formatting"; return 0 ;;
    2) ;;
    *) log "cannot probe $1 (blkid exit $status); leaving it alone"; return 1 ;;
  esac
  if ! cmp -s -n 1048576 "$1" /dev/zero; then
    log "$1 shows no signature, but its first MiB is not all zeros or cannot be read; leaving it alone"
    return 1
  fi
  log "formatting blank $1 as ext4"
  mkfs.ext4 -q -L "$2" "$1"
}

settle() {
  udevadm settle --timeout=60 || log "udev events still pending after 60 s"
}

mount_at() {
  mkdir -p "$2" || return 1
  if mountpoint -q "$2"; then
    log "$2 is already mounted"
    return 0
  fi
  mount -o defaults,noatime "$1" "$2" || return 1
  log "mounted $1 at $2"
}

instance_store_disks() {
  settle
  lsblk -dnpo NAME,MODEL | awk '/Amazon EC2 NVMe Instance Storage/ {print $1}'
}

setup_scratch() {
  [ "$SCRATCH_DISK_COUNT" -gt 0 ] || return 0
  mountpoint -q /scratch && return 0
  local disks=() waited=0 device
  while :; do
    mapfile -t disks < <(instance_store_disks)
    [ "${#disks[@]}" -ge "$SCRATCH_DISK_COUNT" ] && break
    if [ "$waited" -ge 120 ]; then
      log "found ${#disks[@]} of $SCRATCH_DISK_COUNT instance-store disks"
      return 1
    fi
    sleep 2
    waited=$((waited + 2))
  done
  if [ "${#disks[@]}" -eq 1 ]; then
    device=${disks[0]}
  else
    device=$(lsblk -nrpo NAME,TYPE "${disks[0]}" | awk '$2 == "raid0" {print $1; exit}')
    if [ -z "$device" ]; then
      device=/dev/md/scratch
      if mdadm --examine "${disks[0]}" >/dev/null 2>&1; then
        mdadm --assemble "$device" "${disks[@]}" || return 1
      else
        mdadm --create "$device" --name=scratch --level=0 --run \\
          --raid-devices="${#disks[@]}" "${disks[@]}" || return 1
      fi
      settle
    fi
  fi
  format_if_blank "$device" scratch || return 1
  mount_at "$device" /scratch
}

setup_data() {
  [ -n "$DATA_DISK_DEVICE" ] || return 0
  local device
  device=$(gpucloud-node ebs-device "$DATA_DISK_DEVICE") || return 1
  format_if_blank "$device" data || return 1
  mount_at "$device" /data
}

setup_persist() {
  [ -n "$PERSIST_TAG_KEY" ] || return 0
  local device
  device=$(gpucloud-node attach-volume) || return 1
  format_if_blank "$device" persist || return 1
  mount_at "$device" /persist
}

setup_shared() {
  # The project's FSx for Lustre file system (/fsx) and S3 mounts (/s3/...), as node.json lists them.
  [ -n "${SHARED_MOUNTS:-}" ] || return 0
  gpucloud-node mount-shared
}

failed=0
setup_scratch || { log "scratch setup failed"; failed=1; }
setup_data || { log "data disk setup failed"; failed=1; }
setup_persist || { log "persistent volume setup failed"; failed=1; }
setup_shared || { log "shared file system or S3 mount failed"; failed=1; }
mkdir -p "$CHECKPOINT_DIR" || failed=1
exit "$failed"
"""

CLOUDWATCH_SCRIPT = """\
#!/bin/bash
# Installs the CloudWatch agent when the image lacks it, then starts it with gpu-cloud's config.
set -uo pipefail
# shellcheck source=/dev/null
. "${GPUCLOUD_BOOTSTRAP_ENV:-/etc/gpucloud/bootstrap.env}"
ctl=/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl
attempts=3

install_agent() {
  # apt-get, not dpkg -i: it waits for the dpkg lock that cloud-init and unattended-upgrades hold
  # at first boot (DPkg::Lock::Timeout). The package needs nothing beyond the base system, so no
  # package lists are fetched (Ubuntu's archive is out of reach under egress endpointsOnly).
  if command -v dnf >/dev/null; then
    dnf install -y -q amazon-cloudwatch-agent
  elif command -v apt-get >/dev/null; then
    local arch package status
    arch=$(dpkg --print-architecture) || return 1
    package=$(mktemp --suffix=.deb) || return 1
    curl -fsSL --retry 3 --retry-all-errors --connect-timeout 20 -o "$package" \\
      "https://amazoncloudwatch-agent-$REGION.s3.$REGION.amazonaws.com/ubuntu/$arch/latest/amazon-cloudwatch-agent.deb" &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 install -y -q "$package"
    status=$?
    rm -f "$package"
    return "$status"
  else
    echo "gpucloud-cloudwatch: the image has neither dnf nor apt-get" >&2
    return 1
  fi
}

if [ ! -x "$ctl" ]; then
  for attempt in $(seq 1 "$attempts"); do
    install_agent && [ -x "$ctl" ] && break
    echo "gpucloud-cloudwatch: installing the CloudWatch agent failed (attempt $attempt of $attempts)" >&2
    [ "$attempt" -lt "$attempts" ] && sleep "${GPUCLOUD_RETRY_PAUSE:-20}"
  done
fi
if [ ! -x "$ctl" ]; then
  echo "gpucloud-cloudwatch: CloudWatch agent not installed after $attempts attempts; no GPU metrics" >&2
  exit 1
fi
exec "$ctl" -a fetch-config -m ec2 -s -c file:/opt/aws/amazon-cloudwatch-agent/etc/gpucloud.json
"""

STORAGE_UNIT_TEXT = f"""\
[Unit]
Description=gpu-cloud storage: /scratch, /data and /persist
Wants=network-online.target
After=network-online.target local-fs.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/gpucloud-storage
TimeoutStartSec={STORAGE_TIMEOUT_SECONDS}

[Install]
WantedBy=multi-user.target
"""

GATE_UNIT_TEXT = f"""\
[Unit]
Description=gpu-cloud health gate: take work only with healthy GPUs
Wants=network-online.target gpucloud-storage.service
After=network-online.target gpucloud-storage.service nvidia-persistenced.service nvidia-fabricmanager.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/bin/gpucloud-node gate
TimeoutStartSec={GATE_TIMEOUT_SECONDS}

[Install]
WantedBy=multi-user.target
"""

DRAIN_UNIT_TEXT = """\
[Unit]
Description=gpu-cloud drain: checkpoint, then release on spot interruption or scale-in
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart=/usr/local/bin/gpucloud-node drain
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
"""

TUNE_UNIT_TEXT = """\
[Unit]
Description=gpu-cloud node tuning: driver and kernel held, TCP BBR with fq, the EFA environment
Before=gpucloud-node-gate.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/bin/gpucloud-node tune
TimeoutStartSec=300

[Install]
WantedBy=multi-user.target
"""

CLOUDWATCH_UNIT_TEXT = f"""\
[Unit]
Description=gpu-cloud CloudWatch agent set-up (first boot)
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/gpucloud-cloudwatch
TimeoutStartSec={CLOUDWATCH_SETUP_TIMEOUT_SECONDS}
"""

WATCH_UNIT_TEXT = """\
# Requires= and After= the gate: systemd starts the watch only once the gate has succeeded, and
# never on a node the gate refused (systemd.unit(5), "Requires=").
[Unit]
Description=gpu-cloud GPU watch: readings, Xid faults, replacement of a faulty node
Requires=gpucloud-node-gate.service
After=gpucloud-node-gate.service

[Service]
Type=simple
ExecStart=/usr/local/bin/gpucloud-node watch
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
"""

COLLECT_UNIT_TEXT = """\
# Requires= and After= the gate, as the watch, and no dependency on the watch: a watch that is down
# shows as the collector's scrape failures. Restart=on-failure, not always: on a stack without a
# Prometheus workspace `collect` exits 0 at once, and Restart=always would start it again every
# RestartSec for ever (an ExecCondition= skip stops Restart=always only from systemd 251,
# systemd/systemd#22257; Ubuntu 22.04 has 249). The limits keep it off the job's back: on an
# 8-GPU node's readings it peaked at 23 MB RSS, 29 MB with its queue full (50,000 samples), and
# used 6-11 ms of CPU a cycle, every 30 s (measured 2026-11-25: gpucloud.node.collector).
[Unit]
Description=gpu-cloud metrics collector: the watch's readings, remote-written to the Prometheus workspace
Requires=gpucloud-node-gate.service
After=gpucloud-node-gate.service gpucloud-node-watch.service

[Service]
Type=simple
ExecStart=/usr/local/bin/gpucloud-node collect
Restart=on-failure
RestartSec=10
MemoryMax=64M
CPUQuota=10%

[Install]
WantedBy=multi-user.target
"""

SCRIPTS = {
    AGENT_COMMAND_PATH: AGENT_COMMAND,
    STORAGE_SCRIPT_PATH: STORAGE_SCRIPT,
    CLOUDWATCH_SCRIPT_PATH: CLOUDWATCH_SCRIPT,
}
"""The executables the agent bundle installs, by path."""

UNITS = {
    TUNE_UNIT: TUNE_UNIT_TEXT,
    STORAGE_UNIT: STORAGE_UNIT_TEXT,
    CLOUDWATCH_UNIT: CLOUDWATCH_UNIT_TEXT,
    GATE_UNIT: GATE_UNIT_TEXT,
    DRAIN_UNIT: DRAIN_UNIT_TEXT,
    WATCH_UNIT: WATCH_UNIT_TEXT,
    COLLECT_UNIT: COLLECT_UNIT_TEXT,
}
"""The systemd units the agent bundle installs, by name."""
