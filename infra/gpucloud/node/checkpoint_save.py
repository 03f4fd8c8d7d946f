"""The checkpoint the drain saves before the instance goes: where it goes in S3, the command that
saves it (the configured one, else the agent's own S3 sync), and that command run within the
notice's time."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucloud.node.aws_calls import Sleep
from gpucloud.node.commands import CommandRunner
from gpucloud.node.config import NodeConfig
from gpucloud.node.retry import Backoff

log = logging.getLogger("gpucloud.node.lifecycle")


def checkpoint_uri(config: NodeConfig, instance_id: str) -> str | None:
    """s3://<bucket>/<write prefix>/checkpoints/<group>/<instance id>/, or None without a bucket."""
    if not config.checkpoint_bucket:
        return None
    prefix = (config.checkpoint_prefix or "").strip("/")
    parts = [part for part in (prefix, "checkpoints", config.group_name, instance_id) if part]
    return f"s3://{config.checkpoint_bucket}/{'/'.join(parts)}/"


def checkpoint_argv(config: NodeConfig, instance_id: str, region: str) -> list[str] | None:
    """The configured checkpoint command, else the agent's own S3 sync of the checkpoint dir
    (boto3, so the node needs no AWS CLI), run as a child so that its time limit holds."""
    if config.checkpoint_command:
        return list(config.checkpoint_command)
    uri = checkpoint_uri(config, instance_id)
    if uri is None:
        return None
    return [sys.executable, "-m", "gpucloud.node", "sync-checkpoint", "--region", region, config.checkpoint_dir, uri]


def sync_to_s3(directory: Path, uri: str, s3: Any, exclude: frozenset[str] = frozenset()) -> int:
    """Upload each file under directory whose copy under uri is missing, of another size or
    older (S3 keeps whole seconds), as `aws s3 sync` decides; returns how many were uploaded.
    Paths in exclude (relative, with /) are left alone on both sides."""
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    stored = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            stored[item["Key"]] = (item["Size"], item["LastModified"].timestamp())
    uploaded = 0
    for path in sorted(path for path in directory.rglob("*") if path.is_file()):
        if path.relative_to(directory).as_posix() in exclude:
            continue
        key = prefix + path.relative_to(directory).as_posix()
        size, modified = stored.get(key, (None, 0.0))
        if size == path.stat().st_size and modified >= int(path.stat().st_mtime):
            continue
        s3.upload_file(str(path), bucket, key)
        uploaded += 1
    return uploaded


def save_checkpoint(
    config: NodeConfig,
    instance_id: str,
    region: str,
    run: CommandRunner,
    backoff: Backoff,
    sleep: Sleep,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Run the checkpoint command with bounded retries, none of them past deadline (a clock()
    value); True once it succeeded. The command also gets GPUCLOUD_INSTANCE_ID,
    GPUCLOUD_CHECKPOINT_DIR and GPUCLOUD_CHECKPOINT_URI."""
    argv = checkpoint_argv(config, instance_id, region)
    if argv is None:
        log.warning("no checkpoint bucket or command configured; nothing saved")
        return False
    if not config.checkpoint_command and not Path(config.checkpoint_dir).is_dir():
        log.info("no checkpoint directory %s; nothing to save", config.checkpoint_dir)
        return True
    environment = dict(
        os.environ,
        GPUCLOUD_INSTANCE_ID=instance_id,
        GPUCLOUD_CHECKPOINT_DIR=config.checkpoint_dir,
        GPUCLOUD_CHECKPOINT_URI=checkpoint_uri(config, instance_id) or "",
    )
    delays = backoff.delays()
    for attempt in range(1, backoff.attempts + 1):
        timeout = config.checkpoint_timeout_s if deadline is None else min(config.checkpoint_timeout_s, deadline - clock())
        if timeout < 1:
            log.error("no time left for checkpoint attempt %d; releasing the instance", attempt)
            return False
        log.info("checkpoint attempt %d of %d: %s", attempt, backoff.attempts, " ".join(argv))
        result = run(argv, timeout, environment)
        for line in (result.stdout + result.stderr).splitlines():
            log.info("checkpoint: %s", line)
        if result.ok:
            log.info("checkpoint saved")
            return True
        log.warning("checkpoint failed: %s", result.describe_failure(timeout))
        delay = next(delays, None)
        if delay is not None:
            sleep(delay if deadline is None else max(0.0, min(delay, deadline - clock())))
    log.error("checkpoint failed %d times; releasing the instance anyway", backoff.attempts)
    return False
