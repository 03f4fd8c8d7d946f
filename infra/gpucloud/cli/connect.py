"""`gpucloud connect`: a local port forwarded to a node of a stack through Session Manager."""

from __future__ import annotations

import argparse
import sys

from gpucloud.cli.common import PLAN_BAD_INPUT, PLAN_FAILED, add_stack_source, aws_failure, stack_file_of
from gpucloud.config import ConfigError, load_stack_file
from gpucloud.connect import PORTS

START_WAIT_SECONDS = 1200
"""How long `--start` waits for the node: a launch, the agent's install and the GPU health gate."""


def connect(arguments: argparse.Namespace) -> int:
    """Forward a local port to a node of the stack through Session Manager (or print the command)."""
    import subprocess

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.connect import ConnectError, find_connection
    from gpucloud.ops.services import service_hint

    try:
        settings = load_stack_file(stack_file_of(arguments), region=arguments.region)
        session = boto3.Session(region_name=settings.region)
        connection = find_connection(
            settings, session.client("autoscaling"), arguments.group, arguments.port, arguments.local_port,
            start=arguments.start, wait_seconds=START_WAIT_SECONDS, progress=lambda line: print(line, file=sys.stderr),
            logs=session.client("logs") if arguments.start else None,
        )
    except (ConfigError, ConnectError) as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    except (BotoCoreError, ClientError) as error:
        print(f"error: finding a node failed: {aws_failure(error)}", file=sys.stderr)
        return PLAN_FAILED
    hint = service_hint(settings, connection.group, connection.remote_port, connection.local_port)
    if hint:
        print(hint, file=sys.stderr)
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


def port_number(text: str) -> int:
    """A TCP port: 1-65535, or for --port a service name; argparse reports anything else in one line."""
    if text in PORTS:
        return PORTS[text]
    if text.isdigit() and 1 <= int(text) <= 65535:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a port: give a number from 1 to 65535 "
                                     f"or one of {', '.join(PORTS)}")


def local_port_number(text: str) -> int:
    if text.isdigit() and 1 <= int(text) <= 65535:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a port: give a number from 1 to 65535")


def register(commands: argparse._SubParsersAction) -> None:
    """Add `connect` and its options."""
    connect_parser = commands.add_parser(
        "connect",
        help="forward a local port to a node (Jupyter, TensorBoard, SSH) through Session Manager",
        epilog=f"exit codes: the session's, {PLAN_BAD_INPUT} nothing to connect to, {PLAN_FAILED} an AWS call failed",
    )
    add_stack_source(connect_parser)
    connect_parser.add_argument("--group", help="the group whose node to reach (default: the stack's only group)")
    connect_parser.add_argument(
        "--port", type=port_number, default=8888, help="remote port, or jupyter, tensorboard, ssh (default 8888)"
    )
    connect_parser.add_argument(
        "--local-port",
        type=local_port_number,
        help="local port to listen on (default: the remote port, 2222 for ssh); another stack can then forward the same port",
    )
    connect_parser.add_argument(
        "--start", action="store_true",
        help=f"when the group has no node in service and asks for none, raise it to 1 and wait for the node "
             f"(up to {START_WAIT_SECONDS // 60} minutes)",
    )
    connect_parser.add_argument("--print", action="store_true", help="print the aws ssm start-session command instead of running it")
    connect_parser.set_defaults(handler=connect)
