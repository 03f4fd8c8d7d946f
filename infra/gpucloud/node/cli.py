"""`gpucloud-node`: the command line that the instance's systemd units and boot scripts call.

Exit status: 0 healthy or done; 1 unhealthy, or a volume that could not be prepared;
2 bad usage or config; 3 the verdict could not be reported to AWS. `launch` exits with its
command's status, or 64 (cannot start here), 74 (checkpoint not restored or saved) or 75
(the drain stopped it: the node is going).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gpucloud.node.boot import boot
from gpucloud.node.collector import DEFAULT_READINGS_LISTEN, Collector, CollectorSettings
from gpucloud.node.commands import run_command
from gpucloud.node.config import NodeConfig, NodeConfigError, load_node_config
from gpucloud.node.exporter import DEFAULT_LISTEN, serve_textfile
from gpucloud.node.imds import InstanceMetadata, MetadataError
from gpucloud.node.job_processes import stop
from gpucloud.node.launcher import DEFAULT_PORT, JobSpec, Launch, LaunchError, decode_command, parse_nodes
from gpucloud.node.aws_calls import LifecycleError, boto3_client, identify
from gpucloud.node.checkpoint_save import sync_to_s3
from gpucloud.node.lifecycle import drain, gate, heartbeat
from gpucloud.node.nvidia import Expectations, HealthReport, check_gpus
from gpucloud.node.preflight_command import add_preflight_commands
from gpucloud.node.prepull import prepull
from gpucloud.node.remote_write import RemoteWriter, region_of
from gpucloud.node.shared_storage import mount_shared, shared_storage_problems
from gpucloud.node.service_commands import add_service_commands
from gpucloud.node.sigv4 import InstanceRoleCredentials
from gpucloud.node.tuning import efa_problems, network_problems, tune
from gpucloud.node.volumes import VolumeError, attach_persistent_volume, local_device_for
from gpucloud.node.watch import WatchSettings, watch

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

    check = commands.add_parser(
        "check", help="check the GPUs: exit 0 healthy, 1 unhealthy (one reason per line)"
    )
    _add_check_options(check)
    check.add_argument("--json", action="store_true", help="print the full report as JSON")
    check.set_defaults(handler=_check)

    gate = commands.add_parser(
        "gate", help="check at boot, then complete the launch lifecycle hook with CONTINUE or ABANDON"
    )
    _add_check_options(gate)
    gate.set_defaults(handler=_gate)

    beat = commands.add_parser(
        "heartbeat", help="keep the launch lifecycle action pending while the node prepares its disks"
    )
    beat.set_defaults(handler=_heartbeat)

    drain = commands.add_parser(
        "drain", help="on spot interruption or scale-in: checkpoint, then complete the terminate hook"
    )
    drain.add_argument("--max-polls", type=int, help="give up after this many polls (default: never)")
    drain.set_defaults(handler=_drain)

    boot_parser = commands.add_parser(
        "boot", help="install the agent bundle's scripts and units and start them (run by the bootstrap stub)"
    )
    boot_parser.set_defaults(handler=_boot)

    tune_parser = commands.add_parser(
        "tune", help="hold the driver and kernel packages, set TCP BBR with fq, and the EFA environment on EFA nodes"
    )
    tune_parser.set_defaults(handler=_tune)

    watch_parser = commands.add_parser(
        "watch", help="every health interval: read the GPUs and the kernel log, export readings, act on faults"
    )
    watch_parser.add_argument("--intervals", type=int, help="stop after this many intervals (default: never)")
    watch_parser.add_argument("--interval-seconds", type=float, help="override health.intervalSeconds")
    watch_parser.add_argument("--kernel-log", type=Path, default=WatchSettings.kernel_log)
    watch_parser.add_argument("--state-dir", type=Path, default=WatchSettings.state_dir)
    watch_parser.add_argument("--textfile", type=Path, default=WatchSettings.textfile,
                              help="Prometheus textfile to write (node_exporter's textfile collector reads it)")
    watch_parser.add_argument("--listen", default=DEFAULT_LISTEN,
                              help="HOST:PORT to serve the readings at /metrics for a collector ('' to serve none)")
    watch_parser.set_defaults(handler=_watch)

    collect_parser = commands.add_parser(
        "collect", help="every scrape interval: read the watch's readings and remote-write them to the Prometheus workspace"
    )
    collect_parser.add_argument("--cycles", type=int, help="stop after this many scrapes (default: never)")
    collect_parser.add_argument("--interval-seconds", type=float, help="override prometheus_scrape_interval_s")
    collect_parser.add_argument("--scrape-url", default=CollectorSettings.scrape_url)
    collect_parser.add_argument("--textfile", type=Path, default=CollectorSettings.textfile,
                                help="where to write the collector's own readings")
    collect_parser.add_argument("--listen", default=DEFAULT_READINGS_LISTEN,
                                help="HOST:PORT to serve the collector's own readings at /metrics ('' to serve none)")
    collect_parser.set_defaults(handler=_collect)

    sync = commands.add_parser(
        "sync-checkpoint", help="upload new and changed files under DIRECTORY to S3_URI (the default checkpoint)"
    )
    sync.add_argument("--region", required=True)
    sync.add_argument("directory")
    sync.add_argument("s3_uri")
    sync.set_defaults(handler=_sync_checkpoint)

    attach = commands.add_parser(
        "attach-volume", help="attach the group's persistent EBS volume by tag; print its device"
    )
    attach.set_defaults(handler=_attach_volume)

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

    add_service_commands(commands)
    add_preflight_commands(commands, lambda config, read_only: run_node_check(config, read_only))

    shared = commands.add_parser(
        "mount-shared", help="mount the project's FSx for Lustre file system and S3 prefixes that node.json lists"
    )
    shared.set_defaults(handler=_mount_shared)

    device = commands.add_parser(
        "ebs-device", help="print the local device of the EBS volume attached as DEVICE_NAME"
    )
    device.add_argument("device_name", help="attachment name in the launch template, e.g. /dev/sdf")
    device.set_defaults(handler=_ebs_device)
    return parser


def _add_check_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expect-gpus", type=int, metavar="N", help="expected GPU count (overrides the config file)"
    )
    parser.add_argument(
        "--expect-model", metavar="NAME", help='expected GPU model, e.g. "H100" (overrides the config file)'
    )
    parser.add_argument("--max-temperature", type=int, metavar="CELSIUS")
    parser.add_argument(
        "--nvlink",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="require every GPU's NVLink links up",
    )
    parser.add_argument(
        "--fabric",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="require NVSwitch fabric registration completed (nvidia-smi -q)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="change no GPU setting: report persistence mode off instead of enabling it",
    )


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


def run_node_check(config: NodeConfig, read_only: bool = False) -> HealthReport:
    expectations = Expectations(
        gpu_count=config.expected_gpu_count,
        gpu_model=config.expected_gpu_model,
        max_temperature_c=config.max_temperature_c,
        nvlink=config.nvlink_expected,
        fabric=config.fabric_expected,
        required_mounts=config.required_mounts,
    )
    report = check_gpus(
        expectations,
        nvidia_smi=config.nvidia_smi,
        timeout_s=config.command_timeout_s,
        enable_persistence=not read_only,
    )
    report.problems += shared_storage_problems(config)
    if config.network_tuning:
        report.problems += network_problems()
    if config.efa_expected:
        report.problems += efa_problems(run_command)
    return report


def _check(config: NodeConfig, arguments: argparse.Namespace) -> int:
    report = run_node_check(config, read_only=arguments.read_only)
    for action in report.actions:
        log.info("%s", action)
    if arguments.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
        return 0 if report.healthy else 1
    if report.healthy:
        names = ", ".join(sorted({gpu.value("name") for gpu in report.gpus}))
        drivers = ", ".join(sorted({gpu.value("driver_version") for gpu in report.gpus}))
        print(f"healthy: {len(report.gpus)} GPU(s) ({names}), driver {drivers}")
    else:
        print("\n".join(report.problems))
    for note in report.notes:
        print(f"note: {note}")
    return 0 if report.healthy else 1


def _gate(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return gate(config, InstanceMetadata(config.imds_endpoint), lambda: run_node_check(config, arguments.read_only),
                prepare_for_pool=lambda: prepull(run_command, lambda region: boto3_client("ecr", region)))


def _heartbeat(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return heartbeat(config, InstanceMetadata(config.imds_endpoint))


def _drain(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return drain(config, InstanceMetadata(config.imds_endpoint), max_polls=arguments.max_polls)


def _boot(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return boot(run_command)


def _tune(config: NodeConfig, arguments: argparse.Namespace) -> int:
    return tune(run_command, config.efa_expected, _instance_type(InstanceMetadata(config.imds_endpoint)))


def _instance_type(metadata: InstanceMetadata) -> str:
    try:
        return metadata.get("/latest/meta-data/instance-type") or ""
    except MetadataError:
        return ""


def _node_identity(config: NodeConfig) -> tuple[InstanceMetadata, str, str, dict[str, str]]:
    """The metadata client, instance id, region, and the labels every reading of the node carries."""
    metadata = InstanceMetadata(config.imds_endpoint)
    instance_id, region = identify(config, metadata)
    labels = {"project": config.project, "group": config.group_name, "instance_id": instance_id,
              "instance_type": _instance_type(metadata)}
    return metadata, instance_id, region, labels


def _watch(config: NodeConfig, arguments: argparse.Namespace) -> int:
    _metadata, instance_id, region, labels = _node_identity(config)
    settings = WatchSettings(
        interval_s=arguments.interval_seconds or config.health_interval_s,
        throttle_minutes=config.throttle_minutes,
        max_replacements_per_hour=config.max_replacements_per_hour,
        replace=config.replace_faulty_nodes,
        kernel_log=arguments.kernel_log,
        state_dir=arguments.state_dir,
        textfile=arguments.textfile,
    )
    if arguments.listen:
        serve_textfile(settings.textfile, arguments.listen)
    state = watch(config, settings, instance_id, region, labels, run_command, boto3_client,
                  max_intervals=arguments.intervals)
    log.info("watch ended: %s", state.outcome or "no node fault")
    return 0


def _collect(config: NodeConfig, arguments: argparse.Namespace) -> int:
    url = config.prometheus_remote_write_url
    if not url:
        log.info("no prometheus_remote_write_url in the node config: nothing to collect")
        return 0
    metadata, _instance_id, region, labels = _node_identity(config)
    settings = CollectorSettings(
        interval_s=arguments.interval_seconds or config.prometheus_scrape_interval_s,
        scrape_url=arguments.scrape_url,
        textfile=arguments.textfile,
    )
    writer = RemoteWriter(url, region_of(url) or region, InstanceRoleCredentials(metadata).get)
    if arguments.listen:
        serve_textfile(settings.textfile, arguments.listen)
    log.info("collecting %s every %g s into %s", settings.scrape_url, settings.interval_s, url)
    Collector(settings, labels, writer).run(max_cycles=arguments.cycles)
    return 0


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


def _attach_volume(config: NodeConfig, arguments: argparse.Namespace) -> int:
    print(attach_persistent_volume(config, InstanceMetadata(config.imds_endpoint)))
    return 0


def _ebs_device(config: NodeConfig, arguments: argparse.Namespace) -> int:
    print(local_device_for(arguments.device_name, config, InstanceMetadata(config.imds_endpoint)))
    return 0


def _mount_shared(config: NodeConfig, arguments: argparse.Namespace) -> int:
    failures = mount_shared(config)
    for failure in failures:
        print(f"gpucloud-node mount-shared: {failure}", file=sys.stderr)
    return 1 if failures else 0
