"""The `check`, `gate`, `heartbeat` and `drain` commands of `gpucloud-node`: the node check, and the
lifecycle steps that report it to Auto Scaling or take the node out."""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

from gpucloud.node.aws_calls import boto3_client
from gpucloud.node.commands import run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.imds import InstanceMetadata
from gpucloud.node.lifecycle import drain, gate, heartbeat
from gpucloud.node.nvidia import Expectations, HealthReport, check_gpus
from gpucloud.node.prepull import prepull
from gpucloud.node.shared_storage import shared_storage_problems
from gpucloud.node.tuning import efa_problems, network_problems

log = logging.getLogger("gpucloud.node")


def add_gate_commands(commands: Any) -> None:
    """Register `check`, `gate`, `heartbeat` and `drain` on the node CLI's subparsers."""
    check = commands.add_parser(
        "check", help="check the GPUs: exit 0 healthy, 1 unhealthy (one reason per line)"
    )
    _add_check_options(check)
    check.add_argument("--json", action="store_true", help="print the full report as JSON")
    check.set_defaults(handler=_check)

    gate_parser = commands.add_parser(
        "gate", help="check at boot, then complete the launch lifecycle hook with CONTINUE or ABANDON"
    )
    _add_check_options(gate_parser)
    gate_parser.set_defaults(handler=_gate)

    beat = commands.add_parser(
        "heartbeat", help="keep the launch lifecycle action pending while the node prepares its disks"
    )
    beat.set_defaults(handler=_heartbeat)

    drain_parser = commands.add_parser(
        "drain", help="on spot interruption or scale-in: checkpoint, then complete the terminate hook"
    )
    drain_parser.add_argument("--max-polls", type=int, help="give up after this many polls (default: never)")
    drain_parser.set_defaults(handler=_drain)


def _add_check_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expect-gpus", type=int, metavar="N", help="expected GPU count (overrides the config file)"
    )
    parser.add_argument(
        "--expect-model", metavar="NAME", help='expected GPU model, e.g. "H100" (overrides the config file)'
    )
    parser.add_argument("--max-temperature", type=int, metavar="CELSIUS")
    parser.add_argument(
        "--nvlink",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="require every GPU's NVLink links up",
    )
    parser.add_argument(
        "--fabric",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="require NVSwitch fabric registration completed (nvidia-smi -q)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="change no GPU setting: report persistence mode off instead of enabling it",
    )


def run_node_check(config: NodeConfig, read_only: bool = False) -> HealthReport:
    """The GPUs, then the mounts, network tuning and EFA devices the node config expects."""
    expectations = Expectations(
        gpu_count=config.expected_gpu_count,
        gpu_model=config.expected_gpu_model,
        max_temperature_c=config.max_temperature_c,
        nvlink=config.nvlink_expected,
        fabric=config.fabric_expected,
        required_mounts=config.required_mounts,
    )
    report = check_gpus(
        expectations,
        nvidia_smi=config.nvidia_smi,
        timeout_s=config.command_timeout_s,
        enable_persistence=not read_only,
    )
    report.problems += shared_storage_problems(config)
    if config.network_tuning:
        report.problems += network_problems()
    if config.efa_expected:
        report.problems += efa_problems(run_command)
    return report


def _check(config: NodeConfig, arguments: argparse.Namespace) -> int:
    report = run_node_check(config, read_only=arguments.read_only)
    for action in report.actions:
        log.info("%s", action)
    if arguments.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
        return 0 if report.healthy else 1
    if report.healthy:
        names = ", ".join(sorted({gpu.value("name") for gpu in report.gpus}))
        drivers = ", ".join(sorted({gpu.value("driver_version") for gpu in report.gpus}))
        print(f"healthy: {len(report.gpus)} GPU(s) ({names}), driver {drivers}")
    else:
        print("\n".join(report.problems))
    for note in report.notes:
        print(f"note: {note}")
    return 0 if report.healthy else 1


def _gate(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return gate(config, InstanceMetadata(config.imds_endpoint), lambda: run_node_check(config, arguments.read_only),
                prepare_for_pool=lambda: prepull(run_command, lambda region: boto3_client("ecr", region)))


def _heartbeat(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return heartbeat(config, InstanceMetadata(config.imds_endpoint))


def _drain(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return drain(config, InstanceMetadata(config.imds_endpoint), max_polls=arguments.max_polls)
