"""The rule that the node role's inline policies fit IAM's quota, named by the key to change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpucloud.config.errors import NAMESPACE
from gpucloud.config.node_role import IAM_ROLE_POLICY_LIMIT, node_role_policies_size

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig


def node_role_policy_problems(config: StackConfig, base: str, region: str) -> list[tuple[str, str]]:
    """The node role's inline policies above IAM's quota, named by the key to change: the data
    prefixes when they do not fit even beside one group, else the groups (each adds its ARN)."""
    size = node_role_policies_size(config, base, region)
    if size <= IAM_ROLE_POLICY_LIMIT:
        return []
    above = f"{size} characters, above the {IAM_ROLE_POLICY_LIMIT} IAM allows a role"
    one_group = config.model_copy(update={"groups": config.groups[:1]})
    if config.data and node_role_policies_size(one_group, base, region) > IAM_ROLE_POLICY_LIMIT:
        return [(f"{NAMESPACE}:data", (
            f"readPrefixes and writePrefixes make the node role's inline policies {above}: grant fewer "
            "or shorter prefixes (a prefix covers every key under it)"))]
    return [(f"{NAMESPACE}:groups", (
        f"{len(config.groups)} groups make the node role's inline policies {above} (the node may set "
        "the lifecycle and health of each group, named by its ARN): use fewer groups, shorter group "
        f"names or a shorter stack name{' or fewer data prefixes' if config.data else ''}"))]
