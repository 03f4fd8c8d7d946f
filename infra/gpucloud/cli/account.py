"""`gpucloud account snapshot`: a stack's account facts read from the real account, for the plan."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpucloud.cli.common import (
    PLAN_BAD_INPUT,
    PLAN_FAILED,
    add_command_group,
    add_stack_source,
    aws_failure,
    facts_path,
    stack_file_of,
)
from gpucloud.config import ConfigError, load_stack_file


def account_snapshot(arguments: argparse.Namespace) -> int:
    """Write a stack's account facts from the real account (read-only calls; needs AWS credentials)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.plan.snapshot import dump_facts, snapshot_account, unanswered_quotas

    stack_file = stack_file_of(arguments)
    try:
        settings = load_stack_file(stack_file, region=arguments.region)
        facts = snapshot_account(settings, boto3.Session(region_name=settings.region), capacity=not arguments.skip_capacity)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    except (BotoCoreError, ClientError) as error:
        print(f"error: reading the account failed: {aws_failure(error)}", file=sys.stderr)
        return PLAN_FAILED
    out = Path(arguments.out) if arguments.out else facts_path(stack_file, settings.stack)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump_facts(facts), encoding="utf-8")
    unanswered = unanswered_quotas(facts)
    if unanswered:
        print(f"warning: Service Quotas answered NoSuchResourceException for {len(unanswered)} EC2 vCPU quota(s) in "
              f"{settings.region}: {', '.join(unanswered)}; the plan will report them not checked (see them with "
              "`aws service-quotas list-service-quotas --service-code ec2`)", file=sys.stderr)
    for scores in facts.capacity.spot_scores if facts.capacity else ():
        if scores.not_scored:
            print(f"warning: EC2 gave group {scores.group} no Spot placement score ({scores.not_scored}); the plan "
                  "will report its capacity not checked", file=sys.stderr)
    total = len(facts.quotas) + len(unanswered)
    print(f"wrote {out}: {len(facts.quotas)} of {total} quotas, {len(facts.vpcs)} VPC(s), {len(facts.amis)} AMI(s)"
          + (f", spot scores of {len(facts.capacity.spot_scores)} group(s)" if facts.capacity else ""))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add `account` and its `snapshot` command."""
    account_commands = add_command_group(commands, "account", "the AWS account a stack deploys into")
    snapshot = account_commands.add_parser(
        "snapshot",
        help="write a stack's account facts (quotas, its VPC, pinned AMIs) from the real account, read-only",
        epilog=f"exit codes: 0 written, {PLAN_BAD_INPUT} bad stack file, {PLAN_FAILED} an AWS call failed",
    )
    add_stack_source(snapshot)
    snapshot.add_argument("--out", help="file to write (default: facts/<stack>.yaml beside the stack file)")
    snapshot.add_argument("--skip-capacity", action="store_true",
                          help="leave out the capacity facts (spot placement scores and prices, zone offerings, free "
                               "reservations, block offers): the plan then says capacity not checked")
    snapshot.set_defaults(handler=account_snapshot)
