"""The `preflight` and `preflight-replace` commands of `gpucloud-node`, which the job document runs
(its `action` parameter) for `gpucloud run --preflight`.

`preflight` runs this node's share (node/preflight.py) with the torchrun step started through the
job launcher, so it meets the other nodes at the job's rendezvous with the job's NCCL and EFA
environment. `preflight-replace` is sent to the node the preflight named: it marks itself
Unhealthy through the watch's own path (`replace_node`: the fault counted, the group's
`maxReplacementsPerHour` breaker asked, the checkpoint saved), so a bad preflight can replace no
more nodes than a run of GPU faults could, and the team's policy needs no SetInstanceHealth.
`preflight-decide` runs on the job's first node for the job supervisor: the search
(node/preflight_search.py) over the rounds' exit statuses, its verdict printed as JSON alone.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpucloud.node.commands import run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.faults import Finding
from gpucloud.node.imds import InstanceMetadata
from gpucloud.node.job_processes import job_dir
from gpucloud.node.launcher import (
    DEFAULT_PORT,
    JobSpec,
    Launch,
    LaunchError,
    decode_command,
    encode_command,
    local_ipv4,
    parse_nodes,
)
from gpucloud.node.aws_calls import boto3_client, identify
from gpucloud.node.preflight import TEXTFILE, Preflight, PreflightSpec, load_floors, report
from gpucloud.node.preflight_search import STDOUT_LIMIT, decide
from gpucloud.node.replace import replace_node

log = logging.getLogger("gpucloud.node")
INSTANCE_TYPE_ENV = "GPUCLOUD_INSTANCE_TYPE"
"""Stands in for the metadata service's instance-type where there is none (the recorded GPU runs)."""


def add_preflight_commands(commands: Any, node_check: Callable[[NodeConfig, bool], Any]) -> None:
    """Register `preflight` and `preflight-replace`; `node_check` is the gate's check (cli.run_node_check)."""
    preflight = commands.add_parser(
        "preflight", help="test this node and the fabric to the job's other nodes before the job starts (JSON result)")
    preflight.add_argument("--job", required=True)
    preflight.add_argument("--nodes", required=True, help="the set's private IPv4s, comma-separated; the first is the master")
    preflight.add_argument("--port", type=int, default=DEFAULT_PORT)
    preflight.add_argument("--gpus-per-node", type=int)
    preflight.add_argument("--image", help="run the torchrun step in this container image (the job's)")
    _add_options(preflight)
    preflight.add_argument("--textfile", type=Path, default=TEXTFILE)
    preflight.set_defaults(handler=lambda config, arguments: _preflight(config, _with_options(arguments), node_check))

    replace = commands.add_parser(
        "preflight-replace", help="mark this node Unhealthy after a preflight named it (within the replacement breaker)")
    replace.add_argument("--job", required=True)
    _add_options(replace)
    replace.set_defaults(handler=lambda config, arguments: _preflight_replace(config, _with_options(arguments)))

    deciding = commands.add_parser(
        "preflight-decide", help="the job supervisor's next preflight step from the rounds' exit statuses (JSON)")
    deciding.add_argument("--job", required=True)
    deciding.add_argument("--nodes", required=True, help="the job's private IPv4s, comma-separated, in rank order")
    deciding.add_argument("--options-b64", required=True,
                          help='base64 of a JSON argv: --instance-ids \'["i-..", ..]\' --rounds \'[["i-..=2", ..], ..]\'')
    deciding.set_defaults(handler=lambda config, arguments: _preflight_decide(arguments))


def _add_options(parser: argparse.ArgumentParser) -> None:
    """The options the job document passes as base64 of a JSON argv (its `commandB64`), or as flags."""
    parser.add_argument("--options-b64", help="base64 of a JSON list of the options below (what the job document sends)")
    parser.add_argument("--level", choices=["quick", "full"], default="quick")
    parser.add_argument("--checks", choices=["local,fabric", "fabric"], default="local,fabric",
                        help="local,fabric (a whole round) or fabric (bisection)")
    parser.add_argument("--efa-devices", type=int, help="EFA devices expected (default: the type's, from the floors file)")
    parser.add_argument("--reason", default="the preflight named this node", help="preflight-replace: why, for the log")


def _with_options(arguments: argparse.Namespace) -> argparse.Namespace:
    if not arguments.options_b64:
        return arguments
    options = argparse.ArgumentParser(prog="gpucloud-node preflight --options-b64")
    _add_options(options)
    try:
        argv = list(decode_command(arguments.options_b64))
    except LaunchError as error:
        options.error(str(error))
    return options.parse_args(argv, namespace=arguments)


def _launcher(config: NodeConfig, spec: PreflightSpec, metadata: InstanceMetadata) -> Callable[[list[str], Mapping[str, str]], int]:
    def launch(argv: list[str], environment: Mapping[str, str]) -> int:
        job = JobSpec(job_id=spec.job_id, nodes=spec.nodes, command=tuple(argv), port=spec.port,
                      gpus_per_node=spec.gpus_per_node, image=spec.image)
        return Launch(job, metadata, run_command, Path(config.checkpoint_dir), lambda uri: None,
                      nvidia_smi=config.nvidia_smi, command_timeout_s=config.command_timeout_s,
                      environ={**os.environ, **environment}, ecr_client=lambda region: boto3_client("ecr", region))()
    return launch


def _instance_type(metadata: InstanceMetadata) -> str:
    return os.environ.get(INSTANCE_TYPE_ENV) or metadata.instance_type()


def _preflight(config: NodeConfig, arguments: argparse.Namespace, node_check: Callable[[NodeConfig, bool], Any]) -> int:
    metadata = InstanceMetadata(config.imds_endpoint)
    try:
        nodes = parse_nodes(arguments.nodes)
        node = local_ipv4(metadata)
    except LaunchError as error:
        log.error("preflight: %s", error)
        return error.status
    spec = PreflightSpec(job_id=arguments.job, nodes=nodes, port=arguments.port, level=arguments.level,
                         checks=tuple(arguments.checks.split(",")), gpus_per_node=arguments.gpus_per_node,
                         image=arguments.image, instance_type=_instance_type(metadata), efa_devices=arguments.efa_devices)
    directory = job_dir(spec.job_id)
    directory.mkdir(parents=True, exist_ok=True)
    preflight = Preflight(spec, node, directory, lambda: node_check(config, True), run_command,
                          _launcher(config, spec, metadata), load_floors())
    labels = {"project": config.project, "group": config.group_name, "instance_type": spec.instance_type}
    return report(preflight(), labels, directory, arguments.textfile)


def _preflight_replace(config: NodeConfig, arguments: argparse.Namespace) -> int:
    metadata = InstanceMetadata(config.imds_endpoint)
    instance_id, region = identify(config, metadata)
    outcome = replace_node(config, instance_id, region, config.group_name,
                           [Finding("preflight", "all", f"job {arguments.job}: {arguments.reason}")],
                           config.max_replacements_per_hour, boto3_client, run_command)
    print(outcome)
    return 0 if outcome == "replaced" else 1


def _preflight_decide(arguments: argparse.Namespace) -> int:
    """Print the verdict as JSON with no trailing newline: the supervisor parses the command's whole
    stdout (States.StringToJson). Exit 2 on input it cannot read."""
    try:
        answer = decision(arguments.nodes, arguments.options_b64)
    except (LaunchError, ValueError) as error:
        log.error("preflight-decide: %s", error)
        return 2
    sys.stdout.write(answer)
    sys.stdout.flush()
    return 0


def decision(nodes_text: str, options_b64: str) -> str:
    """The verdict JSON of `preflight-decide --nodes nodes_text --options-b64 options_b64`."""
    options = argparse.ArgumentParser(prog="gpucloud-node preflight-decide --options-b64", exit_on_error=False)
    options.add_argument("--instance-ids", required=True)
    options.add_argument("--rounds", required=True)
    try:
        parsed = options.parse_args(list(decode_command(options_b64)))
    except argparse.ArgumentError as error:
        raise ValueError(str(error)) from None
    answer = json.dumps(decide(parse_nodes(nodes_text), json.loads(parsed.instance_ids), json.loads(parsed.rounds),
                               encode=encode_command), separators=(",", ":"))
    if len(answer) > STDOUT_LIMIT:
        answer = json.dumps({"action": "stop", "reason": f"the preflight's verdict ({len(answer)} characters) is "
                             f"longer than the {STDOUT_LIMIT} of a command's output the supervisor reads",
                             "culprits": {}, "sets": [], "replace": []})
    return answer
