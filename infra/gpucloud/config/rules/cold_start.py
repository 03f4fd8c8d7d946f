"""Rules between the cold-start keys (`services.containers[].weights`, `warmPool.prepullImages`,
`storage.lustre.preloadPrefixes`) and the rest of the stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpucloud.config.cold_start import weights_tier
from gpucloud.config.errors import NAMESPACE

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig
    from gpucloud.config.weights import WeightsConfig


def cold_start_problems(config: StackConfig) -> list[tuple[str, str]]:
    """Rules between the cold-start keys and the rest of the stack, each named by the key to change."""
    problems = _preload_problems(config)
    for index, group in enumerate(config.groups):
        key = f"{NAMESPACE}:groups[{index}]"
        pool = group.warm_pool
        if pool is not None and pool.prepull_images and not group.services.containers:
            problems.append((f"{key}.warmPool.prepullImages", "is true, but the group runs no services.containers: "
                             "there is no image to pull while the instance waits in the pool"))
        for number, container in enumerate(group.services.containers):
            if container.weights is not None:
                problems += _weights_problems(config, container.weights, f"{key}.services.containers[{number}].weights")
    return problems


def _weights_problems(config: StackConfig, weights: WeightsConfig, key: str) -> list[tuple[str, str]]:
    data = config.data
    if data is None or weights.bucket != data.bucket or not any(weights.prefix.startswith(p) for p in data.read_prefixes):
        return [(f"{key}.source", (
            f"{weights.source} is outside what the node role may read: stage the weights once under "
            "s3://<data.bucket>/<one of data.readPrefixes>/ and name them there"))]
    tier = weights_tier(config, weights)
    if tier == "fsx" and config.storage.lustre is None:
        return [(f"{key}.to", "fsx reads the weights through the Lustre file system, and the stack has no storage.lustre: "
                 "add it or use scratch")]
    if tier == "mountpoint" and config.storage.s3_mount is None:
        return [(f"{key}.to", "mountpoint reads the weights through Mountpoint for Amazon S3, and the stack has no "
                 "storage.s3Mount: add it or use scratch")]
    return []


def _preload_problems(config: StackConfig) -> list[tuple[str, str]]:
    lustre, data = config.storage.lustre, config.data
    if lustre is None or not lustre.preload_prefixes:
        return []
    linked = [*data.read_prefixes, *data.write_prefixes] if data else []
    outside = [prefix for prefix in lustre.preload_prefixes if not any(prefix.startswith(p) for p in linked)]
    if outside:
        return [(f"{NAMESPACE}:storage.lustre.preloadPrefixes", (
            f"{outside[0]!r} is not under a prefix the file system is linked to (data.readPrefixes, "
            "data.writePrefixes): only those are imported into it"))]
    return []
