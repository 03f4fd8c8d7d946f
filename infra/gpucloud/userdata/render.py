"""User data for gpu-cloud GPU instances: a small `#cloud-config` document, gzip-compressed.

`render_user_data` is a pure function of plain values. It carries the node's data files and the
bootstrap stub, which fetches the agent bundle from S3 (by the key and SHA-256 pinned in
node.json), unpacks it and hands over to its boot step. Every value that varies (names, prefixes,
tags) reaches the instance only inside data files (JSON via json.dumps, a shell env file via
shlex.quote) written through a YAML dumper, so a hostile string can never become code.

EC2 caps user data at 16 KB before base64; `encode_user_data` gzips the document (cloud-init
recognises gzip) and the largest node's comes to a few KB.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shlex
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from gpucloud.naming import BOOT_PHASE_STREAM_PREFIX
from gpucloud.userdata.layout import (
    BOOT_PHASE_LOG_PATH,
    BOOTSTRAP_ENV_PATH,
    BOOTSTRAP_STUB_PATH,
    CLOUDWATCH_CONFIG_PATH,
    DATA_MOUNT,
    LAUNCH_HEARTBEAT_LIMIT_SECONDS,
    NODE_CONFIG_PATH,
    NODE_PYTHON,
    NVLINK_FAMILIES,
    NVSWITCH_FAMILIES,
    LUSTRE_MOUNT_PATH,
    PERSIST_MOUNT,
    SCRATCH_MOUNT,
    SERVICES_CONFIG_PATH,
    USER_DATA_LIMIT_BYTES,
    VOLUME_WAIT_SECONDS,
)

_ATTACHMENT_NAME = re.compile(r"^/dev/(sd[b-z]|xvd[b-z][a-z]?)$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_LUSTRE_SOURCE = re.compile(r"^[a-z0-9.-]+@tcp:/[A-Za-z0-9]+$")
_REMOTE_WRITE_URL = re.compile(r"^https://aps-workspaces\.[a-z0-9-]+\.amazonaws\.com/workspaces/[A-Za-z0-9-]+/api/v1/remote_write$")


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
    boot_phase_log_group: str | None = None
    """Where the CloudWatch agent sends the boot-phase lines (the stack's job log group); None: nowhere."""
    agent_bucket: str = ""
    agent_key: str = ""
    agent_sha256: str = ""
    """Where the agent bundle lies and the SHA-256 the stub holds it to."""
    efa_expected: bool = False
    """Multi-node groups: the node sets the NCCL/EFA environment and `check` wants the EFA provider."""
    health_interval_s: int = 60
    throttle_minutes: int = 10
    max_replacements_per_hour: int = 2
    replace_faulty_nodes: bool = True
    prometheus_remote_write_url: str | None = None
    """The AMP workspace's https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/api/v1/remote_write;
    None: the node's collector does nothing."""
    prometheus_scrape_interval_s: int = 30
    services: Mapping[str, Any] | None = None
    """What `gpucloud-node services` starts once the gate has passed (JupyterLab, TensorBoard,
    containers): written to services.json only for a group that has any."""

    lustre_source: str | None = None
    """The project's FSx for Lustre file system, `<dns name>@tcp:/<mount name>`, mounted at /fsx."""
    s3_mounts: tuple[str, ...] = ()
    """Mountpoint for Amazon S3 mounts, `ro|rw BUCKET PREFIX /PATH` each."""
    s3_mount_install: str = "ami"

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
        if not (self.agent_bucket and self.agent_key and _SHA256.match(self.agent_sha256)):
            raise ValueError("agent_bucket, agent_key and agent_sha256 (64 lowercase hex digits) name the agent bundle")
        if not 10 <= self.health_interval_s <= 3600:
            raise ValueError("health_interval_s must be between 10 and 3600 seconds")
        if self.prometheus_remote_write_url is not None and not _REMOTE_WRITE_URL.match(self.prometheus_remote_write_url):
            raise ValueError(
                "prometheus_remote_write_url must be an AMP workspace's remote-write URL, "
                "https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/api/v1/remote_write, "
                f"not {self.prometheus_remote_write_url!r}"
            )
        if self.lustre_source is not None and not _LUSTRE_SOURCE.match(self.lustre_source):
            raise ValueError(f"lustre_source must be <dns name>@tcp:/<mount name>, not {self.lustre_source!r}")
        if self.s3_mount_install not in ("ami", "download"):
            raise ValueError("s3_mount_install must be ami or download")
        if not 10 <= self.prometheus_scrape_interval_s <= 300:
            raise ValueError("prometheus_scrape_interval_s must be between 10 and 300 seconds")

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
        _file(
            CLOUDWATCH_CONFIG_PATH, json.dumps(cloudwatch_agent_config(params), separators=(",", ":")) + "\n"
        ),
        _file(BOOTSTRAP_STUB_PATH, bootstrap_stub_source(), executable=True),
    ]
    if params.services:
        document["write_files"].insert(1, _file(SERVICES_CONFIG_PATH, json.dumps(params.services, indent=1, sort_keys=True) + "\n"))
    document["runcmd"] = [[NODE_PYTHON, BOOTSTRAP_STUB_PATH]]
    return "#cloud-config\n" + yaml.dump(
        document, Dumper=_CloudConfigDumper, sort_keys=False, default_flow_style=False, width=2**16
    )


def bootstrap_stub_source() -> str:
    """The stub as the node gets it: gpucloud/userdata/bootstrap_stub.py, byte for byte."""
    return resources.files("gpucloud.userdata").joinpath("bootstrap_stub.py").read_text(encoding="utf-8")


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
        "agent_bucket": params.agent_bucket,
        "agent_key": params.agent_key,
        "agent_sha256": params.agent_sha256,
        "efa_expected": params.efa_expected,
        "network_tuning": True,
        "health_interval_s": params.health_interval_s,
        "throttle_minutes": params.throttle_minutes,
        "max_replacements_per_hour": params.max_replacements_per_hour,
        "replace_faulty_nodes": params.replace_faulty_nodes,
        "prometheus_remote_write_url": params.prometheus_remote_write_url,
        "prometheus_scrape_interval_s": params.prometheus_scrape_interval_s,
        "lustre_source": params.lustre_source,
        "lustre_mount_path": LUSTRE_MOUNT_PATH,
        "s3_mounts": list(params.s3_mounts),
        "s3_mount_install": params.s3_mount_install,
    }


def bootstrap_env(params: NodeBootstrap) -> str:
    """Shell assignments the storage and CloudWatch scripts source; every value is shlex-quoted."""
    values = {
        "REGION": params.region,
        "SCRATCH_DISK_COUNT": str(params.scratch_disk_count),
        "DATA_DISK_DEVICE": params.data_disk_device or "",
        "PERSIST_TAG_KEY": params.persistent_volume_tag_key or "",
        "CHECKPOINT_DIR": params.checkpoint_dir,
        "SHARED_MOUNTS": "1" if params.lustre_source or params.s3_mounts else "",
    }
    return "".join(f"{name}={shlex.quote(value)}\n" for name, value in values.items())


def cloudwatch_agent_config(params: NodeBootstrap) -> dict[str, Any]:
    """CloudWatch agent config: GPU metrics from nvidia-smi plus CPU, memory and disk,
    dimensioned by Auto Scaling group so a group's fleet can be graphed and alarmed as one; and the
    node's boot-phase lines, the only file it sends, to the job log group (stream
    `boot-phases/<Auto Scaling group>/<instance id>`: `{instance_id}` is one of the variables log_stream_name takes;
    CloudWatch user guide, "Manually create or edit the CloudWatch agent configuration file", logs
    section, read 2026-11-28). A file the agent has no saved offset for is read from its start
    (`from_beginning` defaults to true: aws/amazon-cloudwatch-agent translator/translate/logs/
    logs_collected/files/collect_list/ruleFromBeginning.go and plugins/inputs/logfile/logfile.go,
    read 2026-11-28), so the phases written before the agent started reach the group too. No
    retention is set: the group's is the stack's."""
    logs = {"logs": {"logs_collected": {"files": {"collect_list": [{
        "file_path": BOOT_PHASE_LOG_PATH,
        "log_group_name": params.boot_phase_log_group,
        "log_stream_name": f"{BOOT_PHASE_STREAM_PREFIX}{params.group_name}/{{instance_id}}",
        "timezone": "UTC",
    }]}}}} if params.boot_phase_log_group else {}
    return {
        "agent": {"metrics_collection_interval": 60, "run_as_user": "root"},
        **logs,
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
            f"user data is {len(payload)} bytes compressed; EC2 allows {USER_DATA_LIMIT_BYTES}"
        )
    return payload


def user_data_base64(params: NodeBootstrap) -> str:
    """What a launch template's user_data field takes: the encoded document, base64."""
    return base64.b64encode(encode_user_data(render_user_data(params))).decode("ascii")


def user_data_text(value: str) -> str | None:
    """The document a launch template's user_data field holds (`user_data_base64`'s inverse), or
    None for a value that is not base64 of gzipped UTF-8 text."""
    try:
        return gzip.decompress(base64.b64decode(value, validate=True)).decode("utf-8")
    except (ValueError, OSError, EOFError, zlib.error):
        return None


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


