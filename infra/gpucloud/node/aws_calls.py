"""The node's AWS calls: one boto3 client per service (imported only when a client is built, so
`check` keeps working on hosts without boto3), retries on transient errors, and this instance's id
and region, which every call names."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from gpucloud.node.config import NodeConfig
from gpucloud.node.imds import InstanceMetadata, MetadataError
from gpucloud.node.retry import Backoff, retry

ClientFactory = Callable[[str, str], Any]
Sleep = Callable[[float], None]

_TRANSIENT_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "ServiceUnavailable",
        "InternalFailure",
        "InternalError",
        "RequestTimeout",
    }
)

log = logging.getLogger("gpucloud.node.lifecycle")


class LifecycleError(RuntimeError):
    """Auto Scaling (or the metadata service) could not be reached or refused a call."""


def boto3_client(service: str, region: str) -> Any:
    import boto3

    return boto3.client(service, region_name=region)


def is_transient_aws_error(error: Exception) -> bool:
    """Throttling, 5xx and connection failures are worth retrying; validation errors are not."""
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in _TRANSIENT_CODES or status >= 500
    return isinstance(error, BotoCoreError)


def call_aws(what: str, operation: Callable[[], Any], backoff: Backoff, sleep: Sleep) -> Any:
    """One AWS call with retries on transient errors; any other failure is a LifecycleError
    (a ClientError stays reachable as its __cause__)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return retry(operation, what=what, backoff=backoff, retryable=is_transient_aws_error, sleep=sleep)
    except (ClientError, BotoCoreError) as error:
        raise LifecycleError(f"{what}: {error}") from error


def identify(config: NodeConfig, metadata: InstanceMetadata) -> tuple[str, str]:
    """This instance's id and region from metadata. The instance runs where metadata says, so a
    different region in the node config is only a warning; the config's region serves when
    metadata cannot tell."""
    try:
        instance_id = metadata.instance_id()
    except MetadataError as error:
        raise LifecycleError(f"cannot identify this instance: {error}") from error
    try:
        region = metadata.region()
    except MetadataError as error:
        if not config.region:
            raise LifecycleError(f"cannot tell this instance's region: {error}") from error
        log.warning("region unreadable from metadata (%s); using %s from the node config", error, config.region)
        return instance_id, config.region
    if config.region and config.region != region:
        log.warning("node config names region %s, but this instance runs in %s; using %s", config.region, region, region)
    return instance_id, region
