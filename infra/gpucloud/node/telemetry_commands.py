"""The `watch` and `collect` commands of `gpucloud-node`: reading the GPUs and kernel log every
health interval, and remote-writing those readings to the Prometheus workspace."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from gpucloud.node.aws_calls import boto3_client, identify
from gpucloud.node.collector import DEFAULT_READINGS_LISTEN, Collector, CollectorSettings
from gpucloud.node.commands import run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.exporter import DEFAULT_LISTEN, serve_textfile
from gpucloud.node.imds import InstanceMetadata
from gpucloud.node.remote_write import RemoteWriter, region_of
from gpucloud.node.sigv4 import InstanceRoleCredentials
from gpucloud.node.watch import WatchSettings, watch

log = logging.getLogger("gpucloud.node")


def add_telemetry_commands(commands: Any) -> None:
    """Register `watch` and `collect` on the node CLI's subparsers."""
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


def _node_identity(config: NodeConfig) -> tuple[InstanceMetadata, str, str, dict[str, str]]:
    """The metadata client, instance id, region, and the labels every reading of the node carries."""
    metadata = InstanceMetadata(config.imds_endpoint)
    instance_id, region = identify(config, metadata)
    labels = {"project": config.project, "group": config.group_name, "instance_id": instance_id,
              "instance_type": metadata.instance_type()}
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
