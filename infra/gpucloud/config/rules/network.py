"""Rules between `network` and what the nodes call: without a NAT gateway, every AWS service the
nodes call needs an interface endpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpucloud.config.errors import NAMESPACE
from gpucloud.config.network import WITHOUT_INTERNET
from gpucloud.config.node_endpoints import describe, missing_interface_endpoints

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig


def network_problems(config: StackConfig) -> list[tuple[str, str]]:
    """A network the stack creates with `egress: endpointsOnly` lacking an endpoint the nodes call."""
    network = config.network
    if network.created and network.egress == "endpointsOnly":
        missing = missing_interface_endpoints(config)
        if missing:
            return [(
                f"{NAMESPACE}:network.interfaceEndpoints",
                f"lacks {describe(missing)}, which the nodes call, and network.egress endpointsOnly leaves them "
                "no NAT gateway (the launch hook would time out and every node be abandoned): add them, or use "
                f"egress: nat. Even with them, {WITHOUT_INTERNET}",
            )]
    return []
