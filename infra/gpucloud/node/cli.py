"""`gpucloud-node`: the command line that the instance's systemd units and boot scripts call.

Exit status: 0 healthy or done; 1 unhealthy, or a volume that could not be prepared;
2 bad usage or config; 3 the verdict could not be reported to AWS. `launch` exits with its
command's status, or 64 (cannot start here), 74 (checkpoint not restored or saved) or 75
(the drain stopped it: the node is going).

Each group of commands is one module, its parsers beside its handlers: `gate_commands`,
`boot_commands`, `telemetry_commands`, `job_commands`, `service_commands`, `preflight_command`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from gpucloud.node.aws_calls import LifecycleError
from gpucloud.node.boot_commands import add_boot_commands
from gpucloud.node.config import NodeConfig, NodeConfigError, load_node_config
from gpucloud.node.gate_commands import add_gate_commands, run_node_check
from gpucloud.node.job_commands import add_job_commands
from gpucloud.node.preflight_command import add_preflight_commands
from gpucloud.node.service_commands import add_service_commands
from gpucloud.node.telemetry_commands import add_telemetry_commands
from gpucloud.node.volumes import VolumeError

IMDS_ENDPOINT_ENV = "GPUCLOUD_IMDS_ENDPOINT"
EXIT_NOT_REPORTED = 3

log = logging.getLogger("gpucloud.node")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    # No timestamps: under systemd, journald stamps and keeps each stderr line.
    logging.basicConfig(
        level=arguments.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        config = load_node_config(arguments.config)
    except NodeConfigError as error:
        log.error("%s", error)
        return 2
    try:
        return arguments.handler(apply_overrides(config, arguments), arguments)
    except VolumeError as error:
        log.error("%s", error)
        return 1
    except LifecycleError as error:
        log.error("%s: %s", arguments.command, error)
        return EXIT_NOT_REPORTED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpucloud-node",
        description="Boot, health gate, GPU watch, metrics collector, drain and storage helpers for a gpu-cloud GPU instance.",
    )
    parser.add_argument(
        "--config", help="node config JSON (default: $GPUCLOUD_NODE_CONFIG or /etc/gpucloud/node.json)"
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument(
        "--imds-endpoint",
        help=f"instance metadata base URL (default: ${IMDS_ENDPOINT_ENV} or http://169.254.169.254)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_gate_commands(commands)
    add_boot_commands(commands)
    add_telemetry_commands(commands)
    add_job_commands(commands)
    add_service_commands(commands)
    add_preflight_commands(commands, lambda config, read_only: run_node_check(config, read_only))
    return parser


def apply_overrides(config: NodeConfig, arguments: argparse.Namespace) -> NodeConfig:
    """Command-line options win over the config file."""
    changes = {
        field: getattr(arguments, option, None)
        for option, field in (
            ("expect_gpus", "expected_gpu_count"),
            ("expect_model", "expected_gpu_model"),
            ("max_temperature", "max_temperature_c"),
            ("nvlink", "nvlink_expected"),
            ("fabric", "fabric_expected"),
            ("imds_endpoint", "imds_endpoint"),
        )
    }
    changes["imds_endpoint"] = changes["imds_endpoint"] or os.environ.get(IMDS_ENDPOINT_ENV)
    return config.replace(**{field: value for field, value in changes.items() if value is not None})
