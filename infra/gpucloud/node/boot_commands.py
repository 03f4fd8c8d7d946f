"""The commands of `gpucloud-node` that the boot runs to ready the machine: `boot`, `tune`,
`attach-volume`, `ebs-device` and `mount-shared`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpucloud.node.boot import boot
from gpucloud.node.commands import run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.imds import InstanceMetadata
from gpucloud.node.shared_storage import mount_shared
from gpucloud.node.tuning import tune
from gpucloud.node.volumes import attach_persistent_volume, local_device_for


def add_boot_commands(commands: Any) -> None:
    """Register the boot's commands on the node CLI's subparsers."""
    for name, summary, handler in (
        ("boot", "install the agent bundle's scripts and units and start them (run by the bootstrap stub)", _boot),
        ("tune", "hold the driver and kernel packages, set TCP BBR with fq, and the EFA environment on EFA nodes",
         _tune),
        ("attach-volume", "attach the group's persistent EBS volume by tag; print its device", _attach_volume),
        ("mount-shared", "mount the project's FSx for Lustre file system and S3 prefixes that node.json lists",
         _mount_shared),
    ):
        commands.add_parser(name, help=summary).set_defaults(handler=handler)
    device = commands.add_parser(
        "ebs-device", help="print the local device of the EBS volume attached as DEVICE_NAME"
    )
    device.add_argument("device_name", help="attachment name in the launch template, e.g. /dev/sdf")
    device.set_defaults(handler=_ebs_device)


def _boot(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return boot(run_command)


def _tune(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return tune(run_command, config.efa_expected, InstanceMetadata(config.imds_endpoint).instance_type())


def _attach_volume(config: NodeConfig, arguments: argparse.Namespace) -> int:
    print(attach_persistent_volume(config, InstanceMetadata(config.imds_endpoint)))
    return 0


def _ebs_device(config: NodeConfig, arguments: argparse.Namespace) -> int:
    print(local_device_for(arguments.device_name, config, InstanceMetadata(config.imds_endpoint)))
    return 0


def _mount_shared(config: NodeConfig, arguments: argparse.Namespace) -> int:
    failures = mount_shared(config)
    for failure in failures:
        print(f"gpucloud-node mount-shared: {failure}", file=sys.stderr)
    return 1 if failures else 0
