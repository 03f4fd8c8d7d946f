"""What a node fetches before it serves, for the cold-start budget: a container's model weights
(`services.containers[].weights`), and the faster paths a stack may turn on (`warmPool.prepullImages`,
`storage.lustre.preloadPrefixes`).

Weights are staged once to the project's bucket, under a read prefix (the node role reads only
those), and read through one tier: copied to /scratch at boot (instance store where the type has
it), or read in place through the Lustre file system (/fsx) or the Mountpoint for Amazon S3 mount
(/s3). The estimate of each (`cold_start_estimate`) and the rules here use the same words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from gpucloud.config.errors import NAMESPACE
from gpucloud.config.fields import ConfigModel, shaped

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig

S3Uri = Annotated[str, shaped(
    r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[A-Za-z0-9][A-Za-z0-9._\-=/]*/",
    "use s3://<bucket>/<prefix>/ (letters, digits and . _ - = / in the prefix, ending in /)", 260)]
WeightsTier = Literal["scratch", "fsx", "mountpoint"]
WEIGHTS_MOUNT = "/weights"
"""Where the container sees its weights (read-only), also given as GPUCLOUD_WEIGHTS_DIR."""


class WeightsConfig(ConfigModel):
    """A model server's weights, staged once under the project's bucket and read by each node."""

    source: S3Uri
    """Where the weights are: `s3://<data.bucket>/<prefix>/`, under one of data.readPrefixes (the only prefixes the
    node role may read)."""
    size_gib: float = Field(gt=0, le=16384, alias="sizeGiB")
    """Their size in GiB: the plan's cold-start budget reads it at the tier's rate."""
    to: WeightsTier | None = None
    """scratch: copied to /scratch/weights/<container> before the container starts (instance store where the type has
    it, else the root volume); fsx: read in place under /fsx (needs storage.lustre); mountpoint: read in place under
    /s3 (needs storage.s3Mount). Unset: fsx where the prefix is in storage.lustre.preloadPrefixes, else scratch.
    The container sees them read-only at /weights (GPUCLOUD_WEIGHTS_DIR)."""

    @property
    def bucket(self) -> str:
        return self.source.removeprefix("s3://").split("/", 1)[0]

    @property
    def prefix(self) -> str:
        return self.source.removeprefix("s3://").split("/", 1)[1]


def linked_prefix(config: StackConfig, key: str) -> str | None:
    """The read or write prefix of data.bucket that holds `key`, if any."""
    data = config.data
    if data is None:
        return None
    return next((prefix for prefix in (*data.read_prefixes, *data.write_prefixes) if key.startswith(prefix)), None)


def weights_tier(config: StackConfig, weights: WeightsConfig) -> WeightsTier:
    """The tier the node reads the weights through: the one given, else the preloaded Lustre file
    system when the prefix is preloaded, else a copy to /scratch."""
    if weights.to is not None:
        return weights.to
    lustre = config.storage.lustre
    if lustre and any(weights.prefix.startswith(prefix) for prefix in lustre.preload_prefixes):
        return "fsx"
    return "scratch"


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
