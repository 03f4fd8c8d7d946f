"""Resource-level rules of the review gate, as plain functions, one module per concern.

Each validator has the signature ``validate(resource_type, props, report, config=None)``:
``props`` are the resource's inputs under pulumi-aws v7 wire names (camelCase),
``report`` takes one message per violation, ``config`` defaults to ``PolicyConfig()``.
Every message ends with how to fix it.

During preview the pack hands the rules a KnownOnlyMapping: reading an unknown input
raises UnknownInputError (the engine's "can't run policy during preview"), and a rule
that can decide without the value reads it with ``peek``.
"""

from gpucloud.policy.rules.capacity import validate_capacity_feasible
from gpucloud.policy.rules.encryption import (
    MIN_DELETION_WINDOW_DAYS,
    validate_ebs_encrypted_with_cmk,
    validate_kms_rotation_and_deletion_window,
    validate_monitoring_data_encrypted_with_cmk,
)
from gpucloud.policy.rules.file_systems import validate_file_system_encrypted_with_cmk
from gpucloud.policy.rules.fleet import MAX_HOP_LIMIT, validate_asg_bounded_and_rebalanced, validate_imdsv2_required
from gpucloud.policy.rules.iam import (
    BROAD_MANAGED_POLICIES,
    IAM_TYPES,
    accepted_iam_findings,
    broad_managed_policy,
    validate_iam_least_privilege,
)
from gpucloud.policy.rules.network import (
    validate_no_public_ip,
    validate_no_world_open_ingress,
    validate_s3_gateway_endpoint_restricted,
    validate_vpc_endpoint_has_policy,
)
from gpucloud.policy.rules.tags import validate_required_tags

__all__ = [
    "BROAD_MANAGED_POLICIES",
    "IAM_TYPES",
    "MAX_HOP_LIMIT",
    "MIN_DELETION_WINDOW_DAYS",
    "accepted_iam_findings",
    "broad_managed_policy",
    "validate_asg_bounded_and_rebalanced",
    "validate_capacity_feasible",
    "validate_ebs_encrypted_with_cmk",
    "validate_file_system_encrypted_with_cmk",
    "validate_iam_least_privilege",
    "validate_imdsv2_required",
    "validate_kms_rotation_and_deletion_window",
    "validate_monitoring_data_encrypted_with_cmk",
    "validate_no_public_ip",
    "validate_no_world_open_ingress",
    "validate_required_tags",
    "validate_s3_gateway_endpoint_restricted",
    "validate_vpc_endpoint_has_policy",
]
