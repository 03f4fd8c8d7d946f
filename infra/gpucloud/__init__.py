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

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from gpucloud.components import *  # noqa: F403

_COMPONENT_NAMES = frozenset(
    {
        "CostBudget",
        "CostBudgetArgs",
        "EncryptedVolume",
        "EncryptedVolumeArgs",
        "EncryptionKey",
        "EncryptionKeyArgs",
        "GpuAutoscaling",
        "GpuAutoscalingArgs",
        "GpuInstanceGroup",
        "GpuInstanceGroupArgs",
        "GpuMonitoring",
        "GpuMonitoringArgs",
        "GpuSecurityGroup",
        "GpuSecurityGroupArgs",
        "ProjectEnvironment",
        "ProjectEnvironmentArgs",
        "S3PrefixAccess",
        "S3PrefixAccessArgs",
        "VolumeBackup",
        "VolumeBackupArgs",
    }
)

__all__ = sorted(_COMPONENT_NAMES)


def __getattr__(name: str) -> Any:
    if name in _COMPONENT_NAMES:
        from gpucloud import components

        return getattr(components, name)
    raise AttributeError(f"module 'gpucloud' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_COMPONENT_NAMES})
