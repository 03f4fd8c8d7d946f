"""The review gate's rules, one entry each; ``evaluate`` for the offline plan and ``check`` for one resource."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import resource_types, rules, stack_rules
from .model import (
    ADVISORY,
    DEFAULT_MAX_GROUP_SIZE,
    DEFAULT_MIN_SPOT_SCORE,
    DEFAULT_REQUIRED_TAGS,
    DISABLED,
    MANDATORY,
    AppliesTo,
    EnforcementLevel,
    PackConfig,
    PlannedResource,
    PolicyConfig,
    ResourceRule,
    StackRule,
    Violation,
)
from .rules import load_balancers
from .taggable import is_taggable
from .values import known_only


def _of_types(*type_tokens: str) -> AppliesTo:
    return frozenset(type_tokens).__contains__


RESOURCE_RULES: tuple[ResourceRule, ...] = (
    ResourceRule(
        name="capacity-feasible",
        description=(
            "Groups on spot have a zone where EC2's Spot placement score for their types and size reaches "
            "minSpotScore (1-10): checked by the offline plan only, from the account facts' scores."
        ),
        enforcement_level=ADVISORY,
        validate=rules.validate_capacity_feasible,
        applies_to=_of_types(resource_types.SPOT_CAPACITY),
        config_schema={
            "minSpotScore": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10,
                "default": DEFAULT_MIN_SPOT_SCORE,
                "description": "A group fails when every zone it may launch spot into scores below this.",
            }
        },
    ),
    ResourceRule(
        name="ebs-encrypted-with-cmk",
        description=(
            "EBS volumes, launch-template block devices and instance block devices are encrypted "
            "with a customer-managed KMS key, not the AWS-managed aws/ebs key."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_ebs_encrypted_with_cmk,
        applies_to=_of_types(resource_types.VOLUME, resource_types.LAUNCH_TEMPLATE, resource_types.INSTANCE),
    ),
    ResourceRule(
        name="file-system-encrypted-with-cmk",
        description=(
            "Persistent FSx for Lustre file systems are encrypted with a customer-managed KMS key (kmsKeyId), "
            "not the AWS-managed aws/fsx key. Scratch file systems take no customer key (FSx encrypts them "
            "with its own): keep data that must be under the project key off them."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_file_system_encrypted_with_cmk,
        applies_to=_of_types(resource_types.LUSTRE_FILE_SYSTEM),
    ),
    ResourceRule(
        name="kms-rotation-and-deletion-window",
        description=(
            "KMS keys rotate automatically and keep a deletion window of at least 14 days (unset means AWS's 30 days)."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_kms_rotation_and_deletion_window,
        applies_to=_of_types(resource_types.KMS_KEY),
    ),
    ResourceRule(
        name="monitoring-data-encrypted-with-cmk",
        description=(
            "CloudWatch log groups and Amazon Managed Service for Prometheus workspaces are encrypted with a "
            "customer-managed KMS key (kmsKeyId, kmsKeyArn), not an AWS-owned one."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_monitoring_data_encrypted_with_cmk,
        applies_to=_of_types(resource_types.LOG_GROUP, resource_types.PROMETHEUS_WORKSPACE),
    ),
    ResourceRule(
        name="imdsv2-required",
        description=(
            'Launch templates and instances require IMDSv2 session tokens (httpTokens "required") '
            "with a metadata hop limit of 1, or 2 on those tagged gpu-cloud:containers=true (container services)."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_imdsv2_required,
        applies_to=_of_types(resource_types.LAUNCH_TEMPLATE, resource_types.INSTANCE),
    ),
    ResourceRule(
        name="no-world-open-ingress",
        description="No security group allows inbound traffic from 0.0.0.0/0 or ::/0.",
        enforcement_level=MANDATORY,
        validate=rules.validate_no_world_open_ingress,
        applies_to=_of_types(
            resource_types.SECURITY_GROUP,
            resource_types.DEFAULT_SECURITY_GROUP,
            resource_types.SECURITY_GROUP_RULE,
            resource_types.SECURITY_GROUP_INGRESS_RULE,
        ),
    ),
    ResourceRule(
        name="iam-least-privilege",
        description=(
            "IAM policies grant no '*' or 'service:*' actions, no S3 or KMS actions on Resource '*', "
            "S3 object access only under key prefixes, and pass the parliament IAM linter; no broad AWS "
            "managed policy (AdministratorAccess, *FullAccess, ...) is attached; bucket, topic, queue and "
            "key policies grant no '*' or 'service:*' actions and open nothing to every principal without "
            "a condition on the caller; KMS key policies give full control to the account root only."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_iam_least_privilege,
        applies_to=rules.IAM_TYPES.__contains__,
    ),
    ResourceRule(
        name="required-tags",
        description="Every taggable AWS resource carries the Project, Owner and CostCenter tags.",
        enforcement_level=MANDATORY,
        validate=rules.validate_required_tags,
        applies_to=is_taggable,
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
        applies_to=_of_types(resource_types.AUTOSCALING_GROUP),
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
        applies_to=_of_types(resource_types.LAUNCH_TEMPLATE, resource_types.INSTANCE),
    ),
    ResourceRule(
        name="load-balancer-internal",
        description=(
            "Load balancers are internal, unless the stack declares one internet-facing (tag "
            "gpu-cloud:internet-facing: declared): pulumi-aws makes a load balancer public whenever internal is unset."
        ),
        enforcement_level=MANDATORY,
        validate=load_balancers.validate_load_balancer_internal,
        applies_to=_of_types(load_balancers.LOAD_BALANCER),
    ),
    ResourceRule(
        name="s3-gateway-endpoint-restricted",
        description=(
            "S3 gateway VPC endpoints carry a policy, and none of its statements allows S3 on every bucket "
            "(AWS's default policy lets anything in the VPC write to any bucket of any account)."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_s3_gateway_endpoint_restricted,
        applies_to=_of_types(resource_types.VPC_ENDPOINT),
    ),
    ResourceRule(
        name="vpc-endpoint-has-policy",
        description=(
            "Interface VPC endpoints carry a policy that admits only named accounts' principals, where the "
            "service takes one (AWS's default policy lets any principal of any account use the endpoint)."
        ),
        enforcement_level=MANDATORY,
        validate=rules.validate_vpc_endpoint_has_policy,
        applies_to=_of_types(resource_types.VPC_ENDPOINT),
    ),
)

STACK_RULES: tuple[StackRule, ...] = (
    StackRule(
        name="load-balancer-tls-when-internet-facing",
        description="Listeners of internet-facing load balancers take HTTPS (or TLS), never plain HTTP or TCP.",
        enforcement_level=MANDATORY,
        validate=load_balancers.validate_internet_facing_load_balancer_uses_tls,
        applies_to=_of_types(load_balancers.LOAD_BALANCER, load_balancers.LISTENER),
    ),
    StackRule(
        name="gpu-group-has-scale-in-path",
        description=(
            "Each GPU Auto Scaling group has a way to scale in: a scheduled action, a target-tracking "
            "policy that may scale in, or a scaling policy with a negative adjustment."
        ),
        enforcement_level=ADVISORY,
        validate=stack_rules.validate_gpu_group_has_scale_in_path,
        applies_to=_of_types(resource_types.AUTOSCALING_GROUP),
    ),
    StackRule(
        name="data-volume-retained",
        description=(
            "EBS data volumes and persistent FSx for Lustre file systems survive the stack: they are created "
            "with retainOnDelete or protect."
        ),
        enforcement_level=ADVISORY,
        validate=stack_rules.validate_data_volume_retained,
        applies_to=_of_types(resource_types.VOLUME, resource_types.LUSTRE_FILE_SYSTEM),
    ),
    StackRule(
        name="asg-spot-template-rebalanced",
        description=(
            "Auto Scaling groups whose launch template requests Spot instances (instanceMarketOptions) "
            "have capacity rebalancing on."
        ),
        enforcement_level=MANDATORY,
        validate=stack_rules.validate_asg_spot_template_rebalanced,
        applies_to=_of_types(resource_types.AUTOSCALING_GROUP),
    ),
    StackRule(
        name="capacity-block-on-demand-one-type",
        description=(
            "Auto Scaling groups that launch into a Capacity Block (launch template market type capacity-block) "
            "run one instance type on-demand, without a mixed instances policy of several types or spot."
        ),
        enforcement_level=MANDATORY,
        validate=stack_rules.validate_capacity_block_group_on_demand_one_type,
        applies_to=_of_types(resource_types.AUTOSCALING_GROUP),
    ),
    StackRule(
        name="capacity-reservations-used",
        description=(
            "Auto Scaling groups that name Capacity Reservations use them (preference not none): an unused "
            "reservation bills at the on-demand rate."
        ),
        enforcement_level=ADVISORY,
        validate=stack_rules.validate_reservations_are_used,
        applies_to=_of_types(resource_types.AUTOSCALING_GROUP),
    ),
)

RULES: tuple[ResourceRule | StackRule, ...] = RESOURCE_RULES + STACK_RULES


def enforcement_levels(config: PolicyConfig | PackConfig | None = None) -> dict[str, str]:
    """Each policy's enforcement level under the config: mandatory, advisory or disabled."""
    if isinstance(config, PackConfig):
        return {rule.name: config.enforcement_level(rule.name, rule.enforcement_level) for rule in RULES}
    return {rule.name: rule.enforcement_level for rule in RULES}


def _rule_config(rule: ResourceRule | StackRule, config: PolicyConfig | PackConfig | None) -> PolicyConfig:
    if isinstance(config, PackConfig):
        return config.policy_config(rule.name)
    return config or PolicyConfig()


def evaluate(
    resources: Iterable[PlannedResource], config: PolicyConfig | PackConfig | None = None
) -> list[Violation]:
    """Run every enabled rule over a planned stack; violations come grouped by resource, in stack order.

    A PolicyConfig applies to every rule at its own level; a PackConfig is read per policy, as
    `pulumi preview --policy-pack-config` reads it, including enforcement levels. A resource rule
    that needs an UNKNOWN input raises UnknownInputError, as in the pack.
    """
    levels = enforcement_levels(config)
    planned = list(resources)
    violations: list[Violation] = []
    for resource in planned:
        for rule in RESOURCE_RULES:
            if levels[rule.name] == DISABLED:
                continue

            def report(message: str, rule: ResourceRule = rule, resource: PlannedResource = resource) -> None:
                violations.append(Violation(rule.name, _level(levels, rule), resource.urn, message))

            rule.validate(resource.type, known_only(resource.props), report, _rule_config(rule, config))
    for stack_rule in STACK_RULES:
        if levels[stack_rule.name] == DISABLED:
            continue

        def report_on(message: str, urn: str | None = None, rule: StackRule = stack_rule) -> None:
            violations.append(Violation(rule.name, _level(levels, rule), urn or "", message))

        stack_rule.validate(planned, report_on, _rule_config(stack_rule, config))
    return violations


def _level(levels: Mapping[str, str], rule: ResourceRule | StackRule) -> EnforcementLevel:
    return MANDATORY if levels[rule.name] == MANDATORY else ADVISORY


def check(
    resource_type: str, inputs: Mapping[str, Any], config: PolicyConfig | PackConfig | None = None
) -> list[Violation]:
    """Every resource rule on one resource, as plain Python: the type token and its inputs in
    pulumi-aws wire names (camelCase), e.g. ``check("aws:ebs/volume:Volume", {"size": 10})``.

    Violations carry an empty URN. Stack rules need the whole stack: use ``evaluate`` for those.
    """
    resource = PlannedResource(urn="", type=resource_type, name="", props=inputs)
    resource_rule_names = {rule.name for rule in RESOURCE_RULES}
    return [violation for violation in evaluate([resource], config) if violation.policy_name in resource_rule_names]
