"""The `services` and `serve` commands of `gpucloud-node`: what the services units run."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from gpucloud.node import boot_phases
from gpucloud.node.commands import run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.containers import serve_container
from gpucloud.node.jupyter import serve_jupyter
from gpucloud.node.aws_calls import boto3_client
from gpucloud.node.preload import preload
from gpucloud.node.services import ServiceError, load_services, start_services
from gpucloud.node.tensorboard import serve_tensorboard

log = logging.getLogger("gpucloud.node")


def add_service_commands(commands: Any) -> None:
    """Register `services` and `serve` on the node CLI's subparsers."""
    services = commands.add_parser(
        "services", help="start what /etc/gpucloud/services.json names (run once the gate has passed)")
    services.set_defaults(handler=_services)
    serve = commands.add_parser("serve", help="run one service in the foreground (what its systemd unit runs)")
    serve.add_argument("service", choices=["jupyter", "tensorboard", "container"])
    serve.add_argument("name", nargs="?", help="the container service's name (serve container NAME)")
    serve.set_defaults(handler=_serve)
    preload = commands.add_parser(
        "preload", help="load the Lustre content services.json names into the file system, once for all nodes")
    preload.set_defaults(handler=_preload)
    phases = commands.add_parser("phases", help="where this node's boot is: each phase it recorded, and the last")
    phases.set_defaults(handler=_phases)


def _services(config: NodeConfig, arguments: argparse.Namespace) -> int:
    try:
        return start_services(run_command)
    except ServiceError as error:
        log.error("%s", error)
        return 2


def _phases(config: NodeConfig, arguments: argparse.Namespace) -> int:
    print(boot_phases.where_it_is(boot_phases.read()))
    return 0


def _preload(config: NodeConfig, arguments: argparse.Namespace) -> int:
    document = load_services() or {}
    return preload(document.get("preload") or [], run_command)


def _serve(config: NodeConfig, arguments: argparse.Namespace) -> int:
    try:
        if arguments.service == "jupyter":
            return serve_jupyter(run_command, lambda region: boto3_client("ssm", region))
        if arguments.service == "tensorboard":
            return serve_tensorboard(run_command)
        if not arguments.name:
            raise ServiceError("serve container needs the container's name")
        return serve_container(arguments.name, run_command, lambda region: boto3_client("ecr", region),
                               aws_client=boto3_client)
    except ServiceError as error:
        log.error("%s", error)
        return 2
