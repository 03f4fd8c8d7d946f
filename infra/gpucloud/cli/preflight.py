"""`gpucloud preflight`: the fabric preflight on N in-service nodes of a group, on its own (new
capacity's acceptance, a Capacity Block's first day): rounds over SSM, the search for a slow node,
its replacement within the group's breaker, and the new set tested again (ops/preflight_run.py)."""

from __future__ import annotations

import argparse
import json
import sys

from gpucloud.cli.common import PLAN_BAD_INPUT, PLAN_FAILED, add_stack_source, stack_file_of
from gpucloud.config import load_stack_file

PREFLIGHT_FAILED = 1


def run_preflight(arguments: argparse.Namespace) -> int:
    import boto3

    from gpucloud.cli.jobs import _guarded
    from gpucloud.ops.job_records import Clients, Clock, new_job, record_location
    from gpucloud.ops.jobs import wait_for_nodes
    from gpucloud.ops.preflight_run import preflight

    def action() -> int:
        settings = load_stack_file(stack_file_of(arguments), region=arguments.region)
        clients = Clients.of(boto3.Session(region_name=settings.region))
        job = new_job(settings, arguments.group, ["gpucloud-preflight"], nodes=arguments.nodes,
                      gpus_per_node=arguments.gpus_per_node, image=arguments.image, port=arguments.port)
        clock = Clock()

        def rewait():
            return wait_for_nodes(clients, job, arguments.node_timeout, clock)

        nodes = rewait()
        if nodes is None:
            print(f"error: group {job.group} has fewer than {job.nodes} nodes in service after "
                  f"{arguments.node_timeout:.0f} s", file=sys.stderr)
            return PLAN_BAD_INPUT
        outcome = preflight(clients, settings, job, nodes, arguments.level, print, clock, rewait)
        if job.checkpoint_uri:
            bucket, key = record_location(job.checkpoint_uri)
            clients.s3.put_object(Bucket=bucket, Key=key.replace("job.json", "preflight.json"), ContentType="application/json",
                                  Body=json.dumps({"passed": outcome.passed, "reason": outcome.reason,
                                                   "tries": outcome.tries}).encode("utf-8"))
            print(f"preflight {job.job_id}: figures at s3://{bucket}/{key.replace('job.json', 'preflight.json')}")
        if not outcome.passed:
            print(f"preflight failed: {outcome.reason}", file=sys.stderr)
            return PREFLIGHT_FAILED
        print("preflight passed on " + ", ".join(f"{node.private_ip} ({node.instance_id})" for node in outcome.nodes))
        return 0

    return _guarded(action)


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "preflight", help="test N in-service nodes of a group and the fabric between them; replace a slow node",
        epilog=f"exit codes: 0 passed, {PREFLIGHT_FAILED} failed (the reason on stderr), {PLAN_BAD_INPUT} bad stack "
        f"file or too few nodes, {PLAN_FAILED} an AWS call failed")
    add_stack_source(parser)
    parser.add_argument("--group", required=True, help="the group whose nodes to test")
    parser.add_argument("--nodes", type=int, default=2, help="how many in-service nodes (default 2)")
    parser.add_argument("--level", choices=("quick", "full"), default="quick",
                        help="quick (about a minute a round) or full (longer burns; new capacity's acceptance)")
    parser.add_argument("--gpus-per-node", type=int, help="GPUs per node to test (default: every GPU of the node)")
    parser.add_argument("--image", help="run the torchrun step in this container image (one with PyTorch)")
    parser.add_argument("--port", type=int, default=29500, help="MASTER_PORT (default 29500)")
    parser.add_argument("--node-timeout", type=float, default=1800.0,
                        help="seconds to wait for N nodes in service, at the start and after a replacement (default 1800)")
    parser.set_defaults(handler=run_preflight)
