"""What a node fetches before it serves, for the cold-start budget: a container's model weights
(`services.containers[].weights`), and the faster paths a stack may turn on (`warmPool.prepullImages`,
`storage.lustre.preloadPrefixes`).

Weights are staged once to the project's bucket, under a read prefix (the node role reads only
those), and read through one tier: copied to /scratch at boot (instance store where the type has
it), or read in place through the Lustre file system (/fsx) or the Mountpoint for Amazon S3 mount
(/s3). The estimate of each (`cold_start_estimate`), the rules (`rules/cold_start.py`) and the model
(`weights.py`) use the same words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig
    from gpucloud.config.weights import WeightsConfig, WeightsTier


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
