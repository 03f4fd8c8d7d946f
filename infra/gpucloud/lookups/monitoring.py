"""Where the managed monitoring services `monitoring` may turn on have an endpoint."""

from __future__ import annotations

from gpucloud.config import StackSettings
from gpucloud.lookups.problems import Problems


MANAGED_MONITORING = (
    ("monitoring.prometheus.enabled", "prometheus", "amp", "Amazon Managed Service for Prometheus"),
    ("monitoring.grafana.enabled", "grafana", "grafana", "Amazon Managed Grafana"),
)
"""The managed services `monitoring` may turn on: config key, config section, the AWS SDK's name
for the service, and its name in words."""


def managed_monitoring_offered(settings: StackSettings, partition: str, problems: Problems) -> None:
    """Neither service is in every region, and creating a workspace where it has no endpoint fails
    at `pulumi up` (moto takes it anywhere). Where they are is the AWS SDK's own endpoint data, as
    the installed botocore carries it (`Session.get_available_regions`)."""
    import boto3
    import botocore

    for key, section, service, words in MANAGED_MONITORING:
        if not getattr(settings.config.monitoring, section).enabled:
            continue
        regions = boto3.session.Session().get_available_regions(service, partition_name=partition)
        if settings.region not in regions:
            problems.add(key, f"{words} has no endpoint in {settings.region} (botocore {botocore.__version__} lists "
                              f"{', '.join(regions)}): deploy the stack in one of those regions, or turn it off")
