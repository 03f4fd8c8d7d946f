"""`gpucloud run`, `jobs`, `logs` and `stop`: jobs on a stack's group, supervised in AWS by the
stack's Step Functions state machine, run through SSM Run Command."""

from __future__ import annotations

import argparse
import sys

from gpucloud.cli.common import PLAN_BAD_INPUT, PLAN_FAILED, add_stack_source, aws_failure, stack_file_of
from gpucloud.config import ConfigError, load_stack_file

JOB_STOPPED = 1
"""Exit code when the job stopped before its end (a replaced node it could not resume past)."""


def _session(arguments: argparse.Namespace):
    import boto3

    from gpucloud.ops.jobs import Clients

    settings = load_stack_file(stack_file_of(arguments), region=arguments.region)
    return settings, Clients.of(boto3.Session(region_name=settings.region))


def _guarded(action):
    """Run `action`, turning the stack's and AWS's refusals into one line and an exit code."""
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.ops.jobs import JobError

    try:
        return action()
    except (ConfigError, JobError) as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    except (BotoCoreError, ClientError) as error:
        print(f"error: an AWS call failed: {aws_failure(error)}", file=sys.stderr)
        return PLAN_FAILED


def run_job(arguments: argparse.Namespace) -> int:
    """Start the job's supervision in AWS; with --detach print its id and return, else follow it to its end."""
    from gpucloud.ops.jobs import new_job
    from gpucloud.ops.supervised_jobs import follow, start

    def action() -> int:
        settings, clients = _session(arguments)
        command = arguments.command[1:] if arguments.command[:1] == ["--"] else arguments.command
        job = new_job(settings, arguments.group, command, nodes=arguments.nodes, gpus_per_node=arguments.gpus_per_node,
                      image=arguments.image, port=arguments.port)
        execution = start(clients, settings, job, max_restarts=arguments.max_restarts, node_timeout=arguments.node_timeout,
                          poll=arguments.poll, preflight=arguments.preflight)
        if arguments.detach:
            print(job.job_id)
            return 0
        print(f"job {job.job_id}: supervised in AWS ({execution}); Ctrl-C stops following, not the job")
        outcome = follow(clients, job, execution, poll=max(1.0, min(15.0, arguments.poll)))
        for result in outcome.results:
            code = "" if result.exit_code is None else f", exit {result.exit_code}"
            print(f"node {result.rank} {result.node.private_ip} ({result.node.instance_id}): {result.status}{code}")
        if outcome.stopped:
            print(outcome.stopped, file=sys.stderr)
        return outcome.exit_code

    return _guarded(action)


def list_jobs(arguments: argparse.Namespace) -> int:
    """The stack's jobs, newest first."""
    from gpucloud.ops.supervised_jobs import jobs

    def action() -> int:
        settings, clients = _session(arguments)
        rows = jobs(clients, settings)
        print(f"{'JOB':<40} {'STATE':<10} {'ATTEMPTS':>8} {'NODES':>5}  STARTED")
        for row in rows:
            print(f"{row['job']:<40} {row['state']:<10} {row['attempts']:>8} {row['nodes']:>5}  {row['started']:%Y-%m-%d %H:%M:%S}"
                  + (f"  {','.join(row['addresses'])}" if row["addresses"] else ""))
        return 0

    return _guarded(action)


def job_logs(arguments: argparse.Namespace) -> int:
    from gpucloud.ops.job_control import logs

    def action() -> int:
        settings, clients = _session(arguments)
        logs(clients, settings, arguments.job, follow=arguments.follow)
        return 0

    return _guarded(action)


def stop_job(arguments: argparse.Namespace) -> int:
    from gpucloud.ops.job_control import stop

    def action() -> int:
        settings, clients = _session(arguments)
        stop(clients, settings, arguments.job)
        return 0

    return _guarded(action)


def register(commands: argparse._SubParsersAction) -> None:
    """Add `run`, `jobs`, `logs` and `stop`."""
    failures = f"{PLAN_BAD_INPUT} bad stack file or job, {PLAN_FAILED} an AWS call failed"
    run_parser = commands.add_parser(
        "run",
        help="run a command on N in-service nodes of a group (torchrun rendezvous env, output to CloudWatch Logs)",
        epilog=f"exit codes: 0 every node exited 0, the first non-zero exit status of a node, {JOB_STOPPED} the job "
        f"stopped on a replaced node, {PLAN_BAD_INPUT} bad stack file or job, {PLAN_FAILED} an AWS call failed",
    )
    add_stack_source(run_parser)
    run_parser.add_argument("--group", required=True, help="the group whose nodes run the job")
    run_parser.add_argument("--nodes", type=int, default=1, help="how many nodes (default 1; raises the group's "
                            "desired capacity when needed, within maxSize)")
    run_parser.add_argument("--gpus-per-node", type=int, help="NPROC_PER_NODE (default: every GPU of the node)")
    run_parser.add_argument("--image", help="run the command in this container image (host network, all GPUs), pinned "
                            "by a version tag or a digest (not latest); a private ECR image must be in a repository "
                            "the group's jobs.ecrRepositories lists")
    run_parser.add_argument("--port", type=int, default=29500, help="MASTER_PORT (default 29500)")
    run_parser.add_argument("--max-restarts", type=int, default=3,
                            help="resume on new nodes at most this many times when a node is replaced (default 3)")
    run_parser.add_argument("--node-timeout", type=float, default=1800.0,
                            help="seconds to wait for N nodes in service, at the start and after a replacement (default 1800)")
    run_parser.add_argument("--detach", action="store_true",
                            help="print the job id and return: the stack's job supervisor (Step Functions) runs the job")
    run_parser.add_argument("--poll", type=int, default=60,
                            help="seconds between the supervisor's reads of the nodes (default 60; each read is priced "
                            "per state transition)")
    run_parser.add_argument("--preflight", choices=("off", "quick", "full", "fabric"), default=None,
                            help="run the job document's preflight of that level on the job's nodes before each "
                            "attempt; a node that fails it is found, replaced and the new set tested (at most twice), "
                            "else the job stops (default: quick on a multiNode group, else off)")
    run_parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    run_parser.set_defaults(handler=run_job)

    jobs_parser = commands.add_parser("jobs", help="list a stack's jobs: state, attempts, nodes",
                                      epilog=f"exit codes: 0 listed, {failures}")
    add_stack_source(jobs_parser)
    jobs_parser.set_defaults(handler=list_jobs)

    logs_parser = commands.add_parser("logs", help="print a job's output (every node, every attempt)",
                                      epilog=f"exit codes: 0 printed, {failures}")
    add_stack_source(logs_parser)
    logs_parser.add_argument("--job", required=True, help="the job id gpucloud run printed")
    logs_parser.add_argument("--follow", action="store_true", help="keep printing until the job ends")
    logs_parser.set_defaults(handler=job_logs)

    stop_parser = commands.add_parser("stop", help="stop a running job on every node",
                                      epilog=f"exit codes: 0 stopped, {failures}")
    add_stack_source(stop_parser)
    stop_parser.add_argument("--job", required=True, help="the job id gpucloud run printed")
    stop_parser.set_defaults(handler=stop_job)
