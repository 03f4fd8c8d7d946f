"""The node's own settings, written by the user data as JSON and read by every agent command."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_CONFIG_PATH = "/etc/gpucloud/node.json"
CONFIG_PATH_ENV = "GPUCLOUD_NODE_CONFIG"

log = logging.getLogger("gpucloud.node.config")


class NodeConfigError(ValueError):
    """The node config file is unreadable or holds a value of the wrong kind."""


@dataclass(frozen=True)
class NodeConfig:
    """What this instance should look like and how it reports to its Auto Scaling group.

    Every field has a default so that `check` works on a machine with no config file at all
    (with `--expect-gpus` / `--expect-model` given on the command line).
    """

    project: str = ""
    group_name: str = ""
    region: str | None = None
    launch_hook_name: str | None = None
    terminate_hook_name: str | None = None
    expected_gpu_count: int | None = None
    expected_gpu_model: str | None = None
    max_temperature_c: int = 85
    nvlink_expected: bool = False
    fabric_expected: bool = False
    required_mounts: tuple[str, ...] = ()
    data_disk_device: str | None = None
    persistent_volume_tag_key: str | None = None
    persistent_volume_tag_value: str | None = None
    persistent_volume_device: str = "/dev/sdp"
    volume_wait_s: float = 600.0
    launch_heartbeat_limit_s: float = 3600.0
    boot_check_attempts: int = 4
    boot_check_retry_s: float = 15.0
    checkpoint_dir: str = "/scratch/checkpoints"
    checkpoint_bucket: str | None = None
    checkpoint_prefix: str | None = None
    checkpoint_command: tuple[str, ...] | None = None
    checkpoint_timeout_s: float = 90.0
    nvidia_smi: str = "nvidia-smi"
    command_timeout_s: float = 30.0
    poll_interval_s: float = 5.0
    imds_endpoint: str = "http://169.254.169.254"
    agent_bucket: str | None = None
    agent_key: str | None = None
    agent_sha256: str | None = None
    efa_expected: bool = False
    network_tuning: bool = False
    """The node was tuned at boot (BBR and fq): `check` then requires the settings in effect."""
    health_interval_s: float = 60.0
    throttle_minutes: float = 10.0
    max_replacements_per_hour: int = 2
    replace_faulty_nodes: bool = True
    prometheus_remote_write_url: str | None = None
    """The stack's AMP workspace remote-write URL; None: `collect` has nothing to do."""
    prometheus_scrape_interval_s: float = 30.0
    lustre_source: str | None = None
    """The project's FSx for Lustre file system, `<dns name>@tcp:/<mount name>`; None: none."""
    lustre_mount_path: str = "/fsx"
    s3_mounts: tuple[str, ...] = ()
    """Mountpoint for Amazon S3 mounts, `ro|rw BUCKET PREFIX /PATH` each (`shared_storage.S3Mount`)."""
    s3_mount_install: str = "ami"
    """ami: the image must carry mount-s3; download: fetch AWS's package at boot when it does not."""

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> NodeConfig:
        """Build from the JSON document. Unknown keys are logged and skipped rather than fatal:
        a half-understood config must still let the node report itself unhealthy."""
        fields = {item.name: item for item in dataclasses.fields(cls)}
        unknown = sorted(set(document) - set(fields))
        if unknown:
            log.warning("ignoring unknown node config keys: %s", ", ".join(unknown))
        return cls(**{key: _coerce(fields[key], value) for key, value in document.items() if key in fields})

    def replace(self, **changes: Any) -> NodeConfig:
        return dataclasses.replace(self, **changes)


def load_node_config(path: str | None = None) -> NodeConfig:
    """Read the config from `path`, else $GPUCLOUD_NODE_CONFIG, else /etc/gpucloud/node.json.

    A missing file at the default location yields defaults (for ad-hoc `check` runs); a missing
    file that was named explicitly is an error.
    """
    named = path or os.environ.get(CONFIG_PATH_ENV)
    config_path = Path(named or DEFAULT_CONFIG_PATH)
    try:
        document = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if named:
            raise NodeConfigError(f"node config {config_path} does not exist") from None
        return NodeConfig()
    except (OSError, ValueError) as error:
        raise NodeConfigError(f"cannot read node config {config_path}: {error}") from error
    if not isinstance(document, dict):
        raise NodeConfigError(f"node config {config_path} must hold a JSON object")
    try:
        return NodeConfig.from_dict(document)
    except NodeConfigError as error:
        raise NodeConfigError(f"node config {config_path}: {error}") from error


def _coerce(field: dataclasses.Field, value: Any) -> Any:
    """Check a JSON value against the field's declared type (annotations are strings here)."""
    kind = str(field.type)
    if value is None:
        if "None" not in kind:
            raise NodeConfigError(f"{field.name} must not be null")
        return None
    if kind.startswith("tuple"):
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise NodeConfigError(f"{field.name} must be a list of strings, not {value!r}")
        return tuple(value)
    if kind == "bool" or isinstance(value, bool):
        if kind != "bool" or not isinstance(value, bool):
            raise NodeConfigError(f"{field.name} must be {kind}, not {value!r}")
        return value
    if kind.startswith(("int", "float")):
        if (
            not isinstance(value, (int, float))
            or value < 0
            or (kind.startswith("int") and value != int(value))
        ):
            raise NodeConfigError(f"{field.name} must be {kind}, not {value!r}")
        return int(value) if kind.startswith("int") else float(value)
    if not isinstance(value, str):
        raise NodeConfigError(f"{field.name} must be a string, not {value!r}")
    return value
