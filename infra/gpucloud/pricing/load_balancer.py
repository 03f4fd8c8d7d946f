"""What the groups' inference endpoints cost: each Application Load Balancer's hours, all month,
and its Load Balancer Capacity Units (LCUs) at an assumed load.

An LCU-hour is the most of: 25 new connections a second, 3,000 active connections a minute, 1 GB
processed for instance targets, 1,000 rule evaluations a second, over the hour
(https://aws.amazon.com/elasticloadbalancing/pricing/, read 2026-11-25). Model-server traffic is
small in all four (a busy node takes a few requests a second, a few KB each), so the estimate
assumes ASSUMED_LCUS on average: one for the endpoint and half a one for each node of the
scenario, which over-counts an idle endpoint and under-counts one streaming large payloads.
"""

from __future__ import annotations

from gpucloud.config import StackConfig

ASSUMED_LCUS_PER_ENDPOINT = 1.0
ASSUMED_LCUS_PER_NODE = 0.5


def assumed_lcus(nodes: float) -> float:
    """The average LCUs of one endpoint in front of `nodes` nodes (see the module docstring)."""
    return ASSUMED_LCUS_PER_ENDPOINT + ASSUMED_LCUS_PER_NODE * nodes


def endpoint_groups(config: StackConfig) -> list[str]:
    return [group.name for group in config.groups if group.endpoint is not None]
