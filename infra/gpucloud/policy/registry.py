"""The review gate's rules, one entry each, and ``evaluate`` for the offline plan."""

from __future__ import annotations

from collections.abc import Iterable

from . import rules, stack_rules
from .model import (
    ADVISORY,
    DEFAULT_MAX_GROUP_SIZE,
    DEFAULT_REQUIRED_TAGS,
    MANDATORY,
    PlannedResource,
    PolicyConfig,
    ResourceRule,
    StackRule,
    Violation,
)

RESOURCE_RULES: tuple[ResourceRule, ...] = (
    ResourceRule(
        name="ebs-encrypted-with-cmk",
        description=(
            "EBS volumes, launch-template block devices and instance block devices are encrypted "
            "with a customer-managed KMS key, not the AWS-managed aws/ebs key."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_ebs_encrypted_with_cmk,
    ),
    ResourceRule(
        name="kms-rotation-and-deletion-window",
        description=(
            "KMS keys rotate automatically and keep a deletion window of at least 14 days (unset means AWS's 30 days)."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_kms_rotation_and_deletion_window,
    ),
    ResourceRule(
        name="imdsv2-required",
        description=(
            'Launch templates and instances require IMDSv2 session tokens (httpTokens "required") '
            "with a metadata hop limit of at most 2."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_imdsv2_required,
    ),
    ResourceRule(
        name="no-world-open-ingress",
        description="No security group allows inbound traffic from 0.0.0.0/0 or ::/0.",
        enforcement_level=MANDATORY,
        validate=rules.validate_no_world_open_ingress,
    ),
    ResourceRule(
        name="iam-least-privilege",
        description=(
            "IAM policies grant no '*' or 'service:*' actions, no S3 or KMS actions on Resource '*', "
            "S3 object access only under key prefixes, and pass the parliament IAM linter; KMS key "
            "policies give full control to the account root only."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_iam_least_privilege,
    ),
    ResourceRule(
        name="required-tags",
        description="Every taggable AWS resource carries the Project, Owner and CostCenter tags.",
        enforcement_level=MANDATORY,
        validate=rules.validate_required_tags,
        config_schema={
            "requiredTags": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_REQUIRED_TAGS),
                "description": "Tag keys every taggable resource must carry with a non-empty value.",
            }
        },
    ),
    ResourceRule(
        name="asg-bounded-and-rebalanced",
        description=(
            "Auto Scaling groups have a finite maxSize within the stack's cap (maxGroupSize), and "
            "groups that use Spot have capacity rebalancing on."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_asg_bounded_and_rebalanced,
        config_schema={
            "maxGroupSize": {
                "type": "integer",
                "minimum": 1,
                "default": DEFAULT_MAX_GROUP_SIZE,
                "description": "Largest maxSize an Auto Scaling group of this stack may have.",
            }
        },
    ),
    ResourceRule(
        name="no-public-ip",
        description="Launch templates and instances do not associate public IP addresses.",
        enforcement_level=MANDATORY,
        validate=rules.validate_no_public_ip,
    ),
)

STACK_RULES: tuple[StackRule, ...] = (
    StackRule(
        name="gpu-group-has-scale-in-path",
        description=(
            "Each GPU Auto Scaling group has a way to scale in: a scheduled action, a target-tracking "
            "policy that may scale in, or a scaling policy with a negative adjustment."
        ),
        enforcement_level=ADVISORY,
        validate=stack_rules.validate_gpu_group_has_scale_in_path,
    ),
    StackRule(
        name="data-volume-retained",
        description=("EBS data volumes survive the stack: they are created with retainOnDelete or protect."),
        enforcement_level=ADVISORY,
        validate=stack_rules.validate_data_volume_retained,
    ),
)

RULES: tuple[ResourceRule | StackRule, ...] = RESOURCE_RULES + STACK_RULES


def evaluate(resources: Iterable[PlannedResource], config: PolicyConfig | None = None) -> list[Violation]:
    """Run every rule over a planned stack; violations come grouped by resource, in stack order."""
    config = config or PolicyConfig()
    planned = list(resources)
    violations: list[Violation] = []
    for resource in planned:
        for rule in RESOURCE_RULES:

            def report(message: str, rule: ResourceRule = rule, resource: PlannedResource = resource) -> None:
                violations.append(Violation(rule.name, rule.enforcement_level, resource.urn, message))

            rule.validate(resource.type, resource.props, report, config)
    for stack_rule in STACK_RULES:

        def report_on(message: str, urn: str | None = None, rule: StackRule = stack_rule) -> None:
            violations.append(Violation(rule.name, rule.enforcement_level, urn or "", message))

        stack_rule.validate(planned, report_on, config)
    return violations
