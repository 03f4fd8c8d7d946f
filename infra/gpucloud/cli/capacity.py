"""`gpucloud capacity buy`: a group's Capacity Block offering shown, and bought only on --confirm."""

from __future__ import annotations

import argparse
import sys

from gpucloud.cli.common import PLAN_BAD_INPUT, PLAN_FAILED, add_command_group, add_stack_source, aws_failure, stack_file_of
from gpucloud.config import ConfigError, load_stack_file


def capacity_buy(arguments: argparse.Namespace) -> int:
    """Show a group's Capacity Block offering; with --confirm <its id>, buy it and name it in the stack file."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.ops.capacity import CapacityError, buy

    stack_file = stack_file_of(arguments)
    try:
        settings = load_stack_file(stack_file, region=arguments.region)
        buy(settings, stack_file, boto3.Session(region_name=settings.region).client("ec2"), arguments.group,
            arguments.confirm)
    except (ConfigError, CapacityError) as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    except (BotoCoreError, ClientError) as error:
        print(f"error: an AWS call failed: {aws_failure(error)}", file=sys.stderr)
        return PLAN_FAILED
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add `capacity` and its `buy` command."""
    capacity_commands = add_command_group(
        commands, "capacity", "reserved GPU capacity: buying a Capacity Block, outside pulumi up"
    )
    capacity_buy_parser = capacity_commands.add_parser(
        "buy",
        help="show a group's Capacity Block offering (real dates, upfront price); with --confirm, buy it once and "
        "write its reservationId into the stack file",
        epilog=f"exit codes: 0 shown or bought, {PLAN_BAD_INPUT} bad stack file, nothing to buy, or --confirm of an "
        "offering EC2 no longer proposes, "
        f"{PLAN_FAILED} an AWS call failed",
    )
    add_stack_source(capacity_buy_parser)
    capacity_buy_parser.add_argument("--group", required=True, help="the group whose capacity.capacityBlock.offering to buy")
    capacity_buy_parser.add_argument(
        "--confirm", metavar="OFFERING_ID",
        help="buy this offering (the id the command showed); not refundable. Without it nothing is bought or written",
    )
    capacity_buy_parser.set_defaults(handler=capacity_buy)
