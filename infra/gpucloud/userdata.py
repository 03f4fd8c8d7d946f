"""User data for gpu-cloud GPU instances: a `#cloud-config` document, delivered gzip-compressed.

`render_user_data` is a pure function of plain values. The scripts and units it carries are fixed
text; every value that varies (names, prefixes, tags) reaches the instance only inside data files
(JSON via json.dumps, a shell env file via shlex.quote) written through a YAML dumper, so a hostile
string can never become code. The node agent (`gpucloud.node`) travels inside as source, so the
instance needs no package index except for boto3 when its image lacks it.

EC2 caps user data at 16 KB before base64, and the document with the agent is larger than that,
so `encode_user_data` gzips it: cloud-init recognises gzip and unpacks it before parsing.
"""

from __future__ import annotations

import ast
import base64
import functools
import gzip
import io
import json
import re
import shlex
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

USER_DATA_LIMIT_BYTES = 16 * 1024
"""EC2 rejects user data larger than this (counted before base64 encoding)."""

AGENT_LIB_DIR = "/opt/gpucloud/lib"
NODE_CONFIG_PATH = "/etc/gpucloud/node.json"
BOOTSTRAP_ENV_PATH = "/etc/gpucloud/bootstrap.env"
AGENT_COMMAND_PATH = "/usr/local/bin/gpucloud-node"
INSTALL_SCRIPT_PATH = "/usr/local/sbin/gpucloud-install-agent"
STORAGE_SCRIPT_PATH = "/usr/local/sbin/gpucloud-storage"
CLOUDWATCH_SCRIPT_PATH = "/usr/local/sbin/gpucloud-cloudwatch"
CLOUDWATCH_CONFIG_PATH = "/opt/aws/amazon-cloudwatch-agent/etc/gpucloud.json"
STORAGE_UNIT = "gpucloud-storage.service"
GATE_UNIT = "gpucloud-node-gate.service"
DRAIN_UNIT = "gpucloud-node-drain.service"
HEARTBEAT_UNIT = "gpucloud-node-heartbeat"
"""A transient unit (systemd-run): it runs once, at first boot, and needs no unit file."""

SCRATCH_MOUNT = "/scratch"
DATA_MOUNT = "/data"
PERSIST_MOUNT = "/persist"

# Instance families whose multi-GPU sizes join their GPUs with NVLink (NVSwitch from p4d on).
NVLINK_FAMILIES = frozenset({"p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6e-gb200"})
NVSWITCH_FAMILIES = frozenset({"p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"})
"""Their GPUs talk through NVSwitches, which the fabric manager must have set up before use."""

VOLUME_WAIT_SECONDS = 600
"""How long the node waits for the data disk, and again for the persistent volume to come free."""
SCRATCH_DISK_WAIT_SECONDS = 120
"""How long the storage script waits for the instance-store disks to show up."""
STORAGE_TIMEOUT_SECONDS = 2 * VOLUME_WAIT_SECONDS + SCRATCH_DISK_WAIT_SECONDS + 600
"""systemd's limit for the storage script: both volume waits, the disk wait, and ten minutes
for udev, RAID assembly and mkfs."""
CLOUDWATCH_SETUP_TIMEOUT_SECONDS = 600
GATE_TIMEOUT_SECONDS = 1200
"""systemd's limit for the gate: boot checks with their pauses, each nvidia-smi call bounded."""
LAUNCH_HEARTBEAT_LIMIT_SECONDS = STORAGE_TIMEOUT_SECONDS + CLOUDWATCH_SETUP_TIMEOUT_SECONDS + GATE_TIMEOUT_SECONDS
"""The agent keeps the launch action pending this long at most: storage, CloudWatch set-up and the
gate, one after the other. Past it, the launch hook's timeout ABANDONs a node that never got ready."""

_ATTACHMENT_NAME = re.compile(r"^/dev/(sd[b-z]|xvd[b-z][a-z]?)$")


class UserDataTooLarge(ValueError):
    """The compressed user data would exceed EC2's 16 KB limit."""


@dataclass(frozen=True)
class NodeBootstrap:
    """Everything one instance of a GPU group needs at boot, as plain values."""

    project: str
    group_name: str
    region: str
    expected_gpu_count: int
    expected_gpu_model: str
    launch_hook_name: str | None = None
    terminate_hook_name: str | None = None
    max_temperature_c: int = 85
    nvlink_expected: bool = False
    fabric_expected: bool = False
    scratch_disk_count: int = 0
    """NVMe instance-store disks of the instance type; 0 = none, 1 = used as is, more = RAID0."""
    data_disk_device: str | None = None
    """Attachment name of the per-instance EBS data disk in the launch template, e.g. /dev/sdf."""
    persistent_volume_tag_key: str | None = None
    persistent_volume_tag_value: str | None = None
    persistent_volume_device: str = "/dev/sdp"
    checkpoint_dir: str = "/scratch/checkpoints"
    checkpoint_bucket: str | None = None
    checkpoint_prefix: str | None = None
    """The group's write prefix; checkpoints go to s3://bucket/<prefix>/checkpoints/<group>/<instance id>/."""
    checkpoint_command: tuple[str, ...] | None = None
    """Runs instead of the agent's S3 sync when set; it reaches the node as JSON data, never as shell."""
    checkpoint_timeout_s: int = 90
    cloudwatch_namespace: str = "GpuCloud"

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            texts = value if isinstance(value, tuple) else (value,)
            if any(isinstance(text, str) and "\x00" in text for text in texts):
                raise ValueError(f"{name} must not contain NUL characters")
        if self.checkpoint_command is not None and not (self.checkpoint_command and all(self.checkpoint_command)):
            raise ValueError("checkpoint_command must be a non-empty list of non-empty arguments")
        if not 10 <= self.checkpoint_timeout_s <= 180:
            raise ValueError("checkpoint_timeout_s must be between 10 and 180 seconds")
        if self.expected_gpu_count < 1:
            raise ValueError("expected_gpu_count must be at least 1")
        if not self.expected_gpu_model.strip():
            raise ValueError("expected_gpu_model must name a GPU model, e.g. 'H100'")
        if not 1 <= self.max_temperature_c <= 120:
            raise ValueError("max_temperature_c must be between 1 and 120 degrees Celsius")
        if not 0 <= self.scratch_disk_count <= 24:
            raise ValueError("scratch_disk_count must be between 0 and 24")
        for name in ("data_disk_device", "persistent_volume_device"):
            device = getattr(self, name)
            if device is not None and not _ATTACHMENT_NAME.match(device):
                raise ValueError(f"{name} must be an EBS attachment name such as /dev/sdf, not {device!r}")
        if (self.persistent_volume_tag_key is None) != (self.persistent_volume_tag_value is None):
            raise ValueError("persistent_volume_tag_key and persistent_volume_tag_value go together")
        if self.persistent_volume_tag_key is not None and not self.persistent_volume_tag_key:
            raise ValueError("persistent_volume_tag_key must not be empty")
        if self.data_disk_device is not None and self.data_disk_device == self.persistent_volume_device:
            raise ValueError("the data disk and the persistent volume need different device names")
        if not self.checkpoint_dir.startswith("/"):
            raise ValueError("checkpoint_dir must be an absolute path")
        if self.checkpoint_prefix is not None and not self.checkpoint_bucket:
            raise ValueError("checkpoint_prefix needs checkpoint_bucket")
        if not self.cloudwatch_namespace.strip():
            raise ValueError("cloudwatch_namespace must not be empty")

    @property
    def has_persistent_volume(self) -> bool:
        return self.persistent_volume_tag_key is not None


def instance_type_has_nvlink(instance_type: str, gpu_count: int) -> bool:
    """Whether the node check should require NVLink links up on this instance type."""
    return gpu_count > 1 and instance_type.split(".", 1)[0] in NVLINK_FAMILIES


def instance_type_has_nvswitch(instance_type: str, gpu_count: int) -> bool:
    """Whether the node check should require the NVSwitch fabric registered on this type."""
    return gpu_count > 1 and instance_type.split(".", 1)[0] in NVSWITCH_FAMILIES


def render_user_data(params: NodeBootstrap) -> str:
    """The `#cloud-config` user data for one GPU instance of the group."""
    document: dict[str, Any] = {}
    if params.scratch_disk_count > 1:
        document["packages"] = ["mdadm"]
    document["write_files"] = [
        _file(NODE_CONFIG_PATH, json.dumps(node_config_document(params), indent=1, sort_keys=True) + "\n"),
        _file(BOOTSTRAP_ENV_PATH, bootstrap_env(params)),
        *(_file(f"{AGENT_LIB_DIR}/{name}", source) for name, source in agent_sources().items()),
        *(_file(path, shippable_shell(script), executable=True) for path, script in SCRIPTS.items()),
        _file(
            CLOUDWATCH_CONFIG_PATH, json.dumps(cloudwatch_agent_config(params), separators=(",", ":")) + "\n"
        ),
        _file(f"/etc/systemd/system/{STORAGE_UNIT}", STORAGE_UNIT_TEXT),
        _file(f"/etc/systemd/system/{GATE_UNIT}", GATE_UNIT_TEXT),
        _file(f"/etc/systemd/system/{DRAIN_UNIT}", DRAIN_UNIT_TEXT),
    ]
    # The heartbeat keeps the launch action pending while the disks are prepared; the gate
    # starts last: once it completes the launch hook the instance takes work, so the disks and
    # the metrics agent must already be in place.
    document["runcmd"] = [
        [INSTALL_SCRIPT_PATH],
        ["systemctl", "daemon-reload"],
        ["systemctl", "enable", STORAGE_UNIT, DRAIN_UNIT, GATE_UNIT],
        ["systemd-run", f"--unit={HEARTBEAT_UNIT}", AGENT_COMMAND_PATH, "heartbeat"],
        ["systemctl", "start", STORAGE_UNIT],
        ["timeout", str(CLOUDWATCH_SETUP_TIMEOUT_SECONDS), CLOUDWATCH_SCRIPT_PATH],
        ["systemctl", "start", "--no-block", DRAIN_UNIT, GATE_UNIT],
    ]
    return "#cloud-config\n" + yaml.dump(
        document, Dumper=_CloudConfigDumper, sort_keys=False, default_flow_style=False, width=2**16
    )


def node_config_document(params: NodeBootstrap) -> dict[str, Any]:
    """The agent's /etc/gpucloud/node.json (read by gpucloud.node.config.NodeConfig)."""
    required_mounts = []
    if params.scratch_disk_count:
        required_mounts.append(SCRATCH_MOUNT)
    if params.data_disk_device:
        required_mounts.append(DATA_MOUNT)
    if params.has_persistent_volume:
        required_mounts.append(PERSIST_MOUNT)
    return {
        "project": params.project,
        "group_name": params.group_name,
        "region": params.region,
        "launch_hook_name": params.launch_hook_name,
        "terminate_hook_name": params.terminate_hook_name,
        "expected_gpu_count": params.expected_gpu_count,
        "expected_gpu_model": params.expected_gpu_model,
        "max_temperature_c": params.max_temperature_c,
        "nvlink_expected": params.nvlink_expected,
        "fabric_expected": params.fabric_expected,
        "required_mounts": required_mounts,
        "data_disk_device": params.data_disk_device,
        "persistent_volume_tag_key": params.persistent_volume_tag_key,
        "persistent_volume_tag_value": params.persistent_volume_tag_value,
        "persistent_volume_device": params.persistent_volume_device,
        "checkpoint_dir": params.checkpoint_dir,
        "checkpoint_bucket": params.checkpoint_bucket,
        "checkpoint_prefix": params.checkpoint_prefix,
        "checkpoint_command": list(params.checkpoint_command) if params.checkpoint_command else None,
        "checkpoint_timeout_s": params.checkpoint_timeout_s,
        "volume_wait_s": VOLUME_WAIT_SECONDS,
        "launch_heartbeat_limit_s": LAUNCH_HEARTBEAT_LIMIT_SECONDS,
    }


def bootstrap_env(params: NodeBootstrap) -> str:
    """Shell assignments the storage and CloudWatch scripts source; every value is shlex-quoted."""
    values = {
        "REGION": params.region,
        "SCRATCH_DISK_COUNT": str(params.scratch_disk_count),
        "DATA_DISK_DEVICE": params.data_disk_device or "",
        "PERSIST_TAG_KEY": params.persistent_volume_tag_key or "",
        "CHECKPOINT_DIR": params.checkpoint_dir,
    }
    return "".join(f"{name}={shlex.quote(value)}\n" for name, value in values.items())


def cloudwatch_agent_config(params: NodeBootstrap) -> dict[str, Any]:
    """CloudWatch agent config: GPU metrics from nvidia-smi plus CPU, memory and disk,
    dimensioned by Auto Scaling group so a group's fleet can be graphed and alarmed as one."""
    return {
        "agent": {"metrics_collection_interval": 60, "run_as_user": "root"},
        "metrics": {
            "namespace": params.cloudwatch_namespace,
            "append_dimensions": {
                "AutoScalingGroupName": "${aws:AutoScalingGroupName}",
                "InstanceId": "${aws:InstanceId}",
                "InstanceType": "${aws:InstanceType}",
            },
            "aggregation_dimensions": [["AutoScalingGroupName"]],
            "metrics_collected": {
                "nvidia_gpu": {
                    "measurement": [
                        "utilization_gpu",
                        "memory_used",
                        "memory_total",
                        "temperature_gpu",
                        "power_draw",
                    ],
                },
                "cpu": {
                    "totalcpu": True,
                    "measurement": [
                        "cpu_usage_idle",
                        "cpu_usage_iowait",
                        "cpu_usage_user",
                        "cpu_usage_system",
                    ],
                },
                "mem": {"measurement": ["mem_used_percent", "mem_available_percent"]},
                "disk": {
                    "resources": ["/", SCRATCH_MOUNT, DATA_MOUNT, PERSIST_MOUNT],
                    "measurement": ["used_percent"],
                },
            },
        },
    }


def encode_user_data(text: str) -> bytes:
    """The bytes to hand EC2: the document gzipped (reproducibly, mtime 0), so that the launch
    template only changes when the document does. Raises UserDataTooLarge past EC2's limit."""
    payload = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    if len(payload) > USER_DATA_LIMIT_BYTES:
        raise UserDataTooLarge(
            f"user data is {len(payload)} bytes compressed; EC2 allows {USER_DATA_LIMIT_BYTES}: shorten "
            "the group's checkpoint command or directory, or the data bucket's write prefix"
        )
    return payload


def user_data_base64(params: NodeBootstrap) -> str:
    """What a launch template's user_data field takes: the encoded document, base64."""
    return base64.b64encode(encode_user_data(render_user_data(params))).decode("ascii")


def agent_sources() -> dict[str, str]:
    """The node agent's modules by path under the agent lib dir, trimmed by shippable_source."""
    return dict(_agent_sources())


@functools.lru_cache(maxsize=1)
def _agent_sources() -> tuple[tuple[str, str], ...]:
    sources = [("gpucloud/__init__.py", AGENT_PACKAGE_INIT)]
    package = resources.files("gpucloud.node")
    for entry in sorted(package.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".py"):
            sources.append(
                (f"gpucloud/node/{entry.name}", shippable_source(entry.read_text(encoding="utf-8")))
            )
    return tuple(sources)


def shippable_source(source: str) -> str:
    """Python source as the node gets it: each statement on one line, at the line where it
    starts in the repository (so tracebacks on the node name repository line numbers), without
    docstrings, comments, function annotations or the spaces Python does not need, indented one
    space a level. The agent never evaluates its function annotations (`from __future__ import
    annotations`); dataclass field annotations stay. Built from tokens, with f-strings copied as
    written, so that every Python the package supports ships the same bytes."""
    dropped, placeholders = _docstring_and_annotation_spans(source)
    lines = source.splitlines(keepends=True)
    rows: list[str | None] = [""] * len(lines)
    depth, parts, start, previous = 0, [""], (0, 0), (0, "")
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for token in tokens:
        kind, text = token.type, token.string
        if kind == tokenize.INDENT:
            depth += 1
        elif kind == tokenize.DEDENT:
            depth -= 1
        elif kind == tokenize.NEWLINE:
            statement = "".join(parts)
            if statement:
                rows[start[0] - 1] = " " * start[1] + statement
                folded = statement.count("\n")
                rows[start[0] : start[0] + folded] = [None] * folded
            parts, previous = [""], (0, "")
        elif kind in _LAYOUT_TOKENS or text == "->" or _inside(token.start, token.end, dropped):
            if token.start in placeholders:
                parts, start = ['""'], (token.start[0], depth)
        else:
            if kind == _FSTRING_START:
                end = _fstring_end(tokens)
                text = _source_between(lines, token.start, end)
            if not parts[-1]:
                start = (token.start[0], depth)
            elif (previous[1][-1:].isalnum() or previous[1].endswith("_")) and (text[0].isalnum() or text[0] == "_"):
                parts.append(" ")
            elif previous[0] == tokenize.NUMBER and text.startswith("."):
                parts.append(" ")
            parts.append(text)
            previous = (kind, text)
    return "".join(row + "\n" for row in rows if row is not None).rstrip("\n") + "\n"


_LAYOUT_TOKENS = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER})
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
"""From Python 3.12 tokenize splits f-strings into parts; they are copied whole, as written."""


def _fstring_end(tokens: Iterator[tokenize.TokenInfo]) -> tuple[int, int]:
    nested = 1
    for token in tokens:
        if token.type == _FSTRING_START:
            nested += 1
        elif token.type == tokenize.FSTRING_END:
            nested -= 1
            if not nested:
                return token.end
    raise SyntaxError("unterminated f-string")


def _source_between(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] : end[1]]
    return lines[start[0] - 1][start[1] :] + "".join(lines[start[0] : end[0] - 1]) + lines[end[0] - 1][: end[1]]


Position = tuple[int, int]


def _inside(start: Position, end: Position, spans: list[tuple[Position, Position]]) -> bool:
    return any(low <= start and end <= high for low, high in spans)


def _docstring_and_annotation_spans(source: str) -> tuple[list[tuple[Position, Position]], set[Position]]:
    """Where docstrings (any bare string statement) and parameter annotations are, and which
    docstrings are a body's only statement, to be kept as "" so the body stays valid."""
    spans: list[tuple[Position, Position]] = []
    placeholders: set[Position] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else ():
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                if isinstance(statement.value.value, str) and statement.end_lineno is not None:
                    spans.append(((statement.lineno, statement.col_offset), (statement.end_lineno, statement.end_col_offset or 0)))
                    if len(body) == 1:
                        placeholders.add((statement.lineno, statement.col_offset))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
                annotation = argument.annotation if argument is not None else None
                if annotation is not None and annotation.end_lineno is not None:
                    spans.append(((argument.lineno, argument.col_offset + len(argument.arg)), (annotation.end_lineno, annotation.end_col_offset or 0)))
            if node.returns is not None and node.returns.end_lineno is not None:
                spans.append(((node.returns.lineno, node.returns.col_offset), (node.returns.end_lineno, node.returns.end_col_offset or 0)))
    return spans, placeholders


def shippable_shell(script: str) -> str:
    """A script without its comment lines (the shebang and shellcheck directives stay) and blank
    lines: they explain the script here, in the repository, and cost user data bytes on the node."""
    return "".join(
        line
        for line in script.splitlines(keepends=True)
        if line.strip() and (not line.lstrip().startswith("#") or line.startswith("#!") or "shellcheck " in line)
    )


def _file(path: str, content: str, executable: bool = False) -> dict[str, str]:
    """A write_files entry; cloud-init's defaults (owner root:root, mode 0644) stay implicit."""
    entry = {"path": path, "content": content}
    if executable:
        entry["permissions"] = "0755"
    return entry


_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter where PyYAML has it (its wheels do): the same document, some thirty times
faster than the pure-Python one, which took a sixth of a 50-group plan rendering user data."""


class _CloudConfigDumper(_SafeDumper):  # type: ignore[valid-type,misc]
    """Safe YAML with multi-line strings as literal blocks, so scripts stay readable in the
    rendered document; the emitter falls back to quoting whenever a block cannot hold a value."""


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_CloudConfigDumper.add_representer(str, _represent_text)


AGENT_PACKAGE_INIT = '"""gpu-cloud node agent, written from user data."""\n'

AGENT_COMMAND = """\
#!/bin/sh
# The gpu-cloud node agent, written from user data to /opt/gpucloud/lib.
PYTHONPATH=/opt/gpucloud/lib${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
exec python3 -m gpucloud.node "$@"
"""

INSTALL_SCRIPT = """\
#!/bin/bash
# Checks the node agent written from user data; fetches boto3 only if the image lacks it.
set -euo pipefail
lib=/opt/gpucloud/lib
if ! python3 -c 'import boto3' >/dev/null 2>&1; then
  python3 -m pip install --quiet --target "$lib" boto3 ||
    { command -v apt-get >/dev/null && apt-get update -q && apt-get install -y -q python3-boto3; } ||
    { command -v dnf >/dev/null && dnf install -y -q python3-boto3; }
fi
PYTHONPATH="$lib" python3 -c 'import boto3, gpucloud.node.cli'
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

failed=0
setup_scratch || { log "scratch setup failed"; failed=1; }
setup_data || { log "data disk setup failed"; failed=1; }
setup_persist || { log "persistent volume setup failed"; failed=1; }
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
if [ ! -x "$ctl" ]; then
  if command -v dnf >/dev/null; then
    dnf install -y -q amazon-cloudwatch-agent
  elif command -v dpkg >/dev/null; then
    arch=$(dpkg --print-architecture)
    package=$(mktemp --suffix=.deb)
    curl -fsSL -o "$package" \\
      "https://amazoncloudwatch-agent-$REGION.s3.$REGION.amazonaws.com/ubuntu/$arch/latest/amazon-cloudwatch-agent.deb" &&
      dpkg -i "$package"
    rm -f "$package"
  fi
fi
if [ ! -x "$ctl" ]; then
  echo "gpucloud-cloudwatch: CloudWatch agent not installed; no GPU metrics" >&2
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

SCRIPTS = {
    AGENT_COMMAND_PATH: AGENT_COMMAND,
    INSTALL_SCRIPT_PATH: INSTALL_SCRIPT,
    STORAGE_SCRIPT_PATH: STORAGE_SCRIPT,
    CLOUDWATCH_SCRIPT_PATH: CLOUDWATCH_SCRIPT,
}
"""The executables the user data writes, by path."""
