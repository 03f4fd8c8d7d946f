"""A container's model weights (`services.containers[].weights`): where they are staged and which
tier the node reads them through; the cold-start budget (`cold_start_estimate`) times each tier."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from gpucloud.config.fields import ConfigModel, shaped

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
