"""gpu-cloud: per-project GPU environments on AWS as Pulumi components.

The front door re-exports the components and their args, as provider SDKs do:

    from gpucloud import GpuInstanceGroup, GpuInstanceGroupArgs

They load on first use, so `import gpucloud` stays instant and pulls in neither Pulumi nor the
offline engine. The rest of the package, in the order data flows: `gpucloud.config` (stack config
models), `gpucloud.lookups` (the AWS facts a config needs), `gpucloud.components`,
`gpucloud.program` (the `pulumi up` entry point), `gpucloud.testing` (the moto engine, extra
`gpucloud[plan]`), `gpucloud.plan` (the offline plan) and `gpucloud.cli`.
"""

from __future__ import annotations

import importlib
from importlib import metadata as _metadata
from typing import TYPE_CHECKING, Any

try:
    __version__ = _metadata.version("gpucloud")
    """The installed distribution's version; pyproject.toml's `version` is the one source of it."""
except _metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from gpucloud.components import *  # noqa: F403


def __getattr__(name: str) -> Any:
    """`gpucloud.GpuInstanceGroup` and the like: `gpucloud.components` loads on first use."""
    if not name.startswith("_"):
        components = importlib.import_module("gpucloud.components")
        if name in components.__all__:
            return getattr(components, name)
    raise AttributeError(f"module 'gpucloud' has no attribute {name!r}")
