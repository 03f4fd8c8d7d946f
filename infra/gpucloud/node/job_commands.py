"""The `launch`, `launch-stop` and `sync-checkpoint` commands of `gpucloud-node`: this node's share
of a `gpucloud run` job, and the agent's own checkpoint upload."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from gpucloud.node.aws_calls import boto3_client
from gpucloud.node.checkpoint_save import sync_to_s3
from gpucloud.node.commands import run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.imds import InstanceMetadata, MetadataError
from gpucloud.node.job_processes import stop
from gpucloud.node.launcher import DEFAULT_PORT, JobSpec, Launch, LaunchError, decode_command, parse_nodes

log = logging.getLogger("gpucloud.node")


def add_job_commands(commands: Any) -> None:
    """Register `sync-checkpoint`, `launch` and `launch-stop` on the node CLI's subparsers."""
    sync = commands.add_parser(
        "sync-checkpoint", help="upload new and changed files under DIRECTORY to S3_URI (the default checkpoint)"
    )
    sync.add_argument("--region", required=True)
    sync.add_argument("directory")
    sync.add_argument("s3_uri")
    sync.set_defaults(handler=_sync_checkpoint)

    launch = commands.add_parser(
        "launch", help="run this node's share of a `gpucloud run` job (rank from this node's IPv4 in --nodes)"
    )
    launch.add_argument("--job", required=True, help="job id: [a-z0-9][a-z0-9-]{0,62}")
    launch.add_argument("--nodes", required=True, help="the job's private IPv4s, comma-separated; the first is the master")
    launch.add_argument("--port", type=int, default=DEFAULT_PORT, help="MASTER_PORT (default: %(default)s)")
    launch.add_argument("--gpus-per-node", type=int, help="NPROC_PER_NODE (default: the GPUs nvidia-smi -L lists)")
    launch.add_argument("--image", help="run the command in this container image (docker, host network, all GPUs)")
    launch.add_argument("--attempt", type=int, default=0, help="0 first; above 0 restores the checkpoint first")
    launch.add_argument("--checkpoint-uri", help="s3://bucket/prefix/ (or file:///dir/) the checkpoint dir syncs to")
    launch.add_argument("--command-b64", required=True, help="base64 of the command's argv as a JSON list of strings")
    launch.set_defaults(handler=_launch)

    launch_stop = commands.add_parser(
        "launch-stop", help="stop this node's share of a job: SIGTERM, then SIGKILL after 30 s"
    )
    launch_stop.add_argument("--job", required=True)
    launch_stop.set_defaults(handler=_launch_stop)


def _sync_checkpoint(config: NodeConfig, arguments: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        uploaded = sync_to_s3(Path(arguments.directory), arguments.s3_uri, boto3_client("s3", arguments.region))
    except (BotoCoreError, ClientError, OSError) as error:
        log.error("checkpoint sync to %s failed: %s", arguments.s3_uri, error)
        return 1
    log.info("uploaded %d file(s) to %s", uploaded, arguments.s3_uri)
    return 0


def _launch(config: NodeConfig, arguments: argparse.Namespace) -> int:
    from gpucloud.node.checkpoints import checkpoint_store

    metadata = InstanceMetadata(config.imds_endpoint)
    try:
        spec = JobSpec(
            job_id=arguments.job,
            nodes=parse_nodes(arguments.nodes),
            command=decode_command(arguments.command_b64),
            port=arguments.port,
            gpus_per_node=arguments.gpus_per_node,
            image=arguments.image,
            attempt=arguments.attempt,
            checkpoint_uri=arguments.checkpoint_uri,
        )
    except LaunchError as error:
        log.error("launch: %s", error)
        return error.status

    def s3_client():
        return boto3_client("s3", _region(config, metadata))

    launch = Launch(spec, metadata, run_command, Path(config.checkpoint_dir),
                    lambda uri: checkpoint_store(uri, s3_client),
                    nvidia_smi=config.nvidia_smi, command_timeout_s=config.command_timeout_s,
                    ecr_client=lambda region: boto3_client("ecr", region))
    return launch()


def _region(config: NodeConfig, metadata: InstanceMetadata) -> str | None:
    try:
        return metadata.region()
    except MetadataError:
        return config.region


def _launch_stop(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return stop(arguments.job, run_command)
