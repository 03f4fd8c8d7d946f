"""`gpucloud connect`: a local port forwarded to a node of a stack through Session Manager."""

from __future__ import annotations

import argparse
import sys

from gpucloud.cli.common import PLAN_BAD_INPUT, PLAN_FAILED, add_stack_source, stack_file_of
from gpucloud.config import ConfigError, load_stack_file


def connect(arguments: argparse.Namespace) -> int:
    """Forward a local port to a node of the stack through Session Manager (or print the command)."""
    import subprocess

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.connect import PORTS, ConnectError, find_connection

    try:
        settings = load_stack_file(stack_file_of(arguments), region=arguments.region)
        port = PORTS.get(str(arguments.port), None) or int(arguments.port)
        session = boto3.Session(region_name=settings.region)
        connection = find_connection(settings, session.client("autoscaling"), arguments.group, port)
    except (ConfigError, ConnectError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    except (BotoCoreError, ClientError) as error:
        print(f"error: finding a node failed: {error}", file=sys.stderr)
        return PLAN_FAILED
    if arguments.print:
        print(connection.shell())
        return 0
    print(f"forwarding localhost:{connection.local_port} to {connection.instance_id}:{connection.remote_port} "
          f"({connection.group}); Ctrl-C ends it", file=sys.stderr)
    try:
        return subprocess.call(connection.command())
    except FileNotFoundError:
        print("error: the AWS CLI is not installed; run the command --print gives where it is", file=sys.stderr)
        return PLAN_FAILED


def register(commands: argparse._SubParsersAction) -> None:
    """Add `connect` and its options."""
    connect_parser = commands.add_parser(
        "connect",
        help="forward a local port to a node (Jupyter, TensorBoard, SSH) through Session Manager",
        epilog=f"exit codes: the session's, {PLAN_BAD_INPUT} nothing to connect to, {PLAN_FAILED} an AWS call failed",
    )
    add_stack_source(connect_parser)
    connect_parser.add_argument("--group", help="the group whose node to reach (default: the stack's only group)")
    connect_parser.add_argument("--port", default="8888", help="remote port, or jupyter, tensorboard, ssh (default 8888)")
    connect_parser.add_argument("--print", action="store_true", help="print the aws ssm start-session command instead of running it")
    connect_parser.set_defaults(handler=connect)
