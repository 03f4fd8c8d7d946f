"""A container's model weights (`services.containers[].weights`), read through the tier the plan
chose: copied from the project's bucket to /scratch before the container starts (`scratch`), or
read in place under the Lustre file system (`fsx`) or the Mountpoint for Amazon S3 mount
(`mountpoint`). Either way the container sees them read-only at /weights.

The copy lists the prefix and downloads each object with boto3's managed transfer, 16 parts at a
time (boto3 TransferConfig max_concurrency; its default is 10); an object already there with the
same size is kept, so a restarted container does not copy again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpucloud.node.services import ServiceError

CONTAINER_PATH = "/weights"
SCRATCH_WEIGHTS = "/scratch/weights/{}"
TRANSFER_THREADS = 16


def weights_path(container: Mapping[str, Any]) -> str | None:
    """Where the node holds the container's weights (None: it has none)."""
    weights = container.get("weights")
    if not weights:
        return None
    return weights.get("path") or SCRATCH_WEIGHTS.format(container["name"])


def volume_arguments(container: Mapping[str, Any]) -> list[str]:
    """`docker run` arguments that show the weights to the container, read-only, and name them."""
    path = weights_path(container)
    if path is None:
        return []
    return ["--volume", f"{path}:{CONTAINER_PATH}:ro", "--env", "GPUCLOUD_WEIGHTS_DIR"]


def stage(s3: Any, bucket: str, prefix: str, directory: Path) -> int:
    """Copy every object under the prefix into the directory (keeping what is there at the same
    size); the bytes copied."""
    from boto3.s3.transfer import TransferConfig

    transfer = TransferConfig(max_concurrency=TRANSFER_THREADS)
    copied = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix):]
            if not relative or relative.endswith("/"):
                continue
            target = (directory / relative).resolve()
            if directory.resolve() not in target.parents:
                raise ServiceError(f"s3://{bucket}/{item['Key']} would land outside {directory}")
            if target.is_file() and target.stat().st_size == item["Size"]:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{target.name}.gpucloud")
            s3.download_file(bucket, item["Key"], str(temporary), Config=transfer)
            os.replace(temporary, target)
            copied += item["Size"]
    return copied
