"""The review-gate rules as plain functions: what each one lets through and what it reports."""

from __future__ import annotations

import json

import pytest

from gpucloud.policy import (
    ADVISORY,
    MANDATORY,
    RESOURCE_RULES,
    RULES,
    STACK_RULES,
    PlannedResource,
    PolicyConfig,
    Violation,
    evaluate,
)
from policy_cases import (
    GPU_GROUP,
    GPU_TEMPLATE,
    GROUP,
    RESOURCE_CASES,
    SCALING_POLICY,
    STACK_CASES,
    TAGS,
    VOLUME,
    VPC_ENDPOINT,
    Case,
    StackCase,
    group,
    planned,
)

RULES_BY_NAME = {rule.name: rule for rule in RULES}

EXPECTED = {
    "ebs-encrypted-with-cmk": MANDATORY,
    "file-system-encrypted-with-cmk": MANDATORY,
    "kms-rotation-and-deletion-window": MANDATORY,
    "monitoring-data-encrypted-with-cmk": MANDATORY,
    "imdsv2-required": MANDATORY,
    "no-world-open-ingress": MANDATORY,
    "iam-least-privilege": MANDATORY,
    "required-tags": MANDATORY,
    "asg-bounded-and-rebalanced": MANDATORY,
    "no-public-ip": MANDATORY,
    "s3-gateway-endpoint-restricted": MANDATORY,
    "vpc-endpoint-has-policy": MANDATORY,
    "gpu-group-has-scale-in-path": ADVISORY,
    "data-volume-retained": ADVISORY,
    "asg-spot-template-rebalanced": MANDATORY,
    "capacity-block-on-demand-one-type": MANDATORY,
    "capacity-reservations-used": ADVISORY,
    "capacity-feasible": ADVISORY,
    "load-balancer-internal": MANDATORY,
    "load-balancer-tls-when-internet-facing": MANDATORY,
}


def run_resource_rule(case: Case, config: PolicyConfig | None = None) -> list[str]:
    messages: list[str] = []
    RULES_BY_NAME[case.policy].validate(case.type, case.props, messages.append, config or PolicyConfig())
    return messages


def run_stack_rule(case: StackCase) -> list[tuple[str, str | None]]:
    reports: list[tuple[str, str | None]] = []
    RULES_BY_NAME[case.policy].validate(
        case.resources, lambda message, urn=None: reports.append((message, urn)), PolicyConfig()
    )
    return reports


def test_registry_holds_every_policy_with_its_enforcement_level():
    assert {rule.name: rule.enforcement_level for rule in RULES} == EXPECTED
    for rule in RULES:
        assert rule.description.endswith("."), rule.name
        assert rule.name == rule.name.lower() and " " not in rule.name


def test_every_policy_has_a_passing_and_a_violating_case():
    covered = {(case.policy, case.violates) for case in RESOURCE_CASES}
    covered |= {(case.policy, bool(case.flagged_urns)) for case in STACK_CASES}
    assert covered == {(name, outcome) for name in EXPECTED for outcome in (True, False)}


@pytest.mark.parametrize("case", RESOURCE_CASES, ids=lambda case: f"{case.policy}:{case.id}")
def test_resource_rule_reports_only_violations(case: Case):
    messages = run_resource_rule(case)
    if case.violates:
        assert messages, f"{case.policy} let {case.id} through"
        assert any(case.message_hint in message for message in messages), messages
        assert all("Fix:" in message for message in messages), messages
    else:
        assert messages == [], f"{case.policy} flagged {case.id}: {messages}"


@pytest.mark.parametrize("case", STACK_CASES, ids=lambda case: f"{case.policy}:{case.id}")
def test_stack_rule_reports_exactly_the_offending_resources(case: StackCase):
    reports = run_stack_rule(case)
    assert {urn for _, urn in reports} == case.flagged_urns
    assert all("Fix:" in message for message, _ in reports)


def test_group_cap_follows_the_stack_config():
    case = next(case for case in RESOURCE_CASES if case.id == "group-over-cap")
    assert run_resource_rule(case, PolicyConfig(max_group_size=64)) == []
    assert run_resource_rule(case, PolicyConfig(max_group_size=32))


def test_policy_config_reads_camel_case_keys_and_keeps_defaults():
    assert PolicyConfig.from_mapping({"maxGroupSize": 32.0}) == PolicyConfig(max_group_size=32)
    assert PolicyConfig.from_mapping(None) == PolicyConfig(
        max_group_size=16, required_tags=("Project", "Owner", "CostCenter")
    )
    with pytest.raises(ValueError):
        PolicyConfig.from_mapping({"maxGroupSize": "sixteen"})


def test_scale_in_path_is_found_through_property_dependencies_when_the_name_is_unknown():
    from gpucloud.policy import UNKNOWN

    unnamed_group = PlannedResource(GPU_GROUP.urn, GROUP, GPU_GROUP.name, {**group(), "name": UNKNOWN})
    policy = PlannedResource(
        urn="urn:pulumi:dev::gpu-cloud::aws:autoscaling/policy:Policy::gpu-util",
        type=SCALING_POLICY,
        name="gpu-util",
        props={
            "autoscalingGroupName": UNKNOWN,
            "policyType": "TargetTrackingScaling",
            "targetTrackingConfiguration": {"targetValue": 60},
        },
        property_dependencies={"autoscalingGroupName": [GPU_GROUP.urn]},
    )
    case = StackCase("by-dependency", "gpu-group-has-scale-in-path", [GPU_TEMPLATE, unnamed_group, policy])
    assert run_stack_rule(case) == []


def test_a_group_without_scale_in_path_is_told_the_stack_keys_and_the_program_resources():
    [(message, urn)] = run_stack_rule(StackCase("alone", "gpu-group-has-scale-in-path", [GPU_TEMPLATE, GPU_GROUP]))
    assert urn == GPU_GROUP.urn
    for key in ("idleShutdown", "scaling.gpuIdleScaleIn", "scaling.targetTracking", "scaling.schedules"):
        assert key in message
    assert "aws.autoscaling.Schedule" in message and "aws.autoscaling.Policy" in message


def test_evaluate_reports_each_violation_with_policy_level_and_urn():
    resources = [
        planned(VOLUME, "scratch", {"size": 100, "tags": {"Project": "vision"}}),
        planned(
            "aws:iam/rolePolicy:RolePolicy",
            "node",
            {
                "role": "r",
                "policy": json.dumps(
                    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
                ),
            },
        ),
        planned(GROUP, "vision-gpu-asg", group(maxSize=40)),
    ]
    violations = evaluate(resources, PolicyConfig(max_group_size=16))
    found = {(violation.policy_name, violation.urn) for violation in violations}
    assert found == {
        ("ebs-encrypted-with-cmk", resources[0].urn),
        ("required-tags", resources[0].urn),
        ("data-volume-retained", resources[0].urn),
        ("iam-least-privilege", resources[1].urn),
        ("asg-bounded-and-rebalanced", resources[2].urn),
        ("gpu-group-has-scale-in-path", resources[2].urn),
    }
    advisory = {violation.policy_name for violation in violations if not violation.mandatory}
    assert advisory == {"data-volume-retained", "gpu-group-has-scale-in-path"}
    assert all(isinstance(violation, Violation) and violation.message for violation in violations)


def test_evaluate_passes_a_compliant_stack():
    from policy_cases import CMK_ARN, launch_template

    resources = [
        planned("aws:ec2/launchTemplate:LaunchTemplate", "vision-gpu-lt", {**launch_template(), "id": "lt-0abc"}),
        planned(GROUP, "vision-gpu-asg", group()),
        planned(
            "aws:autoscaling/schedule:Schedule",
            "nightly",
            {
                "autoscalingGroupName": "vision-gpu-asg",
                "scheduledActionName": "nightly",
                "minSize": 0,
                "maxSize": 0,
                "desiredCapacity": 0,
                "recurrence": "0 20 * * *",
            },
        ),
        planned(
            VOLUME,
            "vision-data",
            {"size": 500, "encrypted": True, "kmsKeyId": CMK_ARN, "tags": TAGS},
            protect=True,
            retainOnDelete=True,
        ),
        planned("aws:kms/key:Key", "vision-key", {"enableKeyRotation": True, "deletionWindowInDays": 30, "tags": TAGS}),
    ]
    assert evaluate(resources) == []


def test_rule_modules_do_not_import_the_policy_sdk():
    """Only the CrossGuard wrapper needs pulumi-policy, and nothing of the plan path imports it:
    `gpucloud plan` runs where the policy extra is not installed."""
    import ast
    from pathlib import Path

    import gpucloud.policy

    package = Path(gpucloud.policy.__file__).parent
    for module in sorted(package.rglob("*.py")):
        tree = ast.parse(module.read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        if module.name == "crossguard.py":
            continue
        assert not any(name.startswith("pulumi_policy") for name in imported), module.name
        assert "gpucloud.policy.crossguard" not in imported, module.name


def test_resource_and_stack_rules_are_disjoint_and_complete():
    assert len(RESOURCE_RULES) + len(STACK_RULES) == len(RULES) == len(EXPECTED)


def test_stack_rules_tolerate_values_unknown_during_preview():
    from gpucloud.policy import UNKNOWN

    unknown_group = PlannedResource(
        "urn:pulumi:dev::gpu-cloud::aws:autoscaling/group:Group::g",
        GROUP,
        "g",
        {
            "name": UNKNOWN,
            "maxSize": UNKNOWN,
            "launchTemplate": UNKNOWN,
            "mixedInstancesPolicy": {
                "launchTemplate": {
                    "overrides": [{"instanceType": UNKNOWN, "instanceRequirements": {"acceleratorTypes": UNKNOWN}}]
                }
            },
        },
    )
    case = StackCase("unknowns", "gpu-group-has-scale-in-path", [unknown_group], {unknown_group.urn})
    assert {urn for _, urn in run_stack_rule(case)} == case.flagged_urns


def test_check_runs_the_resource_rules_on_a_type_and_its_inputs():
    from gpucloud.policy import check
    from policy_cases import CMK_ARN

    violations = check(VOLUME, {"size": 100, "tags": {"Project": "vision"}})
    assert {(violation.policy_name, violation.urn) for violation in violations} == {
        ("ebs-encrypted-with-cmk", ""),
        ("required-tags", ""),
    }
    assert check(VOLUME, {"size": 100, "encrypted": True, "kmsKeyId": CMK_ARN, "tags": TAGS}) == []
    assert check(GROUP, group(maxSize=24), PolicyConfig(max_group_size=32)) == []


def test_validators_run_without_a_config():
    messages: list[str] = []
    RULES_BY_NAME["asg-bounded-and-rebalanced"].validate(GROUP, group(maxSize=17), messages.append)
    assert messages and "cap of 16" in messages[0]


def test_pack_config_reads_levels_and_properties_as_the_pulumi_cli_does():
    from gpucloud.policy import PackConfig, enforcement_levels

    names = [rule.name for rule in RULES]
    config = PackConfig.from_document(
        {
            "all": "advisory",
            "required-tags": "disabled",
            "asg-bounded-and-rebalanced": {"enforcementLevel": "mandatory", "maxGroupSize": 32},
            "no-public-ip": {"enforcementLevel": "remediate"},
        },
        names,
    )
    levels = enforcement_levels(config)
    assert levels["required-tags"] == "disabled"
    assert levels["asg-bounded-and-rebalanced"] == levels["no-public-ip"] == "mandatory"
    assert levels["ebs-encrypted-with-cmk"] == levels["gpu-group-has-scale-in-path"] == "advisory"
    assert config.policy_config("asg-bounded-and-rebalanced").max_group_size == 32
    assert config.policy_config("required-tags") == PolicyConfig()


def test_pack_config_overrides_enforcement_levels_in_evaluate():
    from gpucloud.policy import PackConfig

    names = [rule.name for rule in RULES]
    resources = [planned(VOLUME, "scratch", {"size": 100, "tags": {"Project": "vision"}}, protect=True)]
    default = {(violation.policy_name, violation.enforcement_level) for violation in evaluate(resources)}
    assert default == {("ebs-encrypted-with-cmk", "mandatory"), ("required-tags", "mandatory")}
    config = PackConfig.from_document(
        {"required-tags": {"enforcementLevel": "disabled"}, "ebs-encrypted-with-cmk": "advisory"}, names
    )
    assert {(v.policy_name, v.enforcement_level) for v in evaluate(resources, config)} == {
        ("ebs-encrypted-with-cmk", "advisory")
    }
    capped = PackConfig.from_document({"required-tags": {"maxGroupSize": 64}}, names)
    assert [v.policy_name for v in evaluate([planned(GROUP, "g", group(maxSize=40))], capped)] == [
        "asg-bounded-and-rebalanced",
        "gpu-group-has-scale-in-path",
    ]  # properties belong to the policy that names them


@pytest.mark.parametrize(
    "document, reason",
    [
        ({"no-such-policy": "advisory"}, "not a policy of this pack"),
        ({"required-tags": "warn"}, "not a valid enforcement level"),
        ({"required-tags": {"enforcementLevel": 2}}, "not a valid enforcement level"),
        ({"required-tags": 3}, "must be a string or object"),
        ({"asg-bounded-and-rebalanced": {"maxGroupSize": "lots"}}, "maxGroupSize"),
        (["asg-bounded-and-rebalanced"], "JSON object"),
    ],
)
def test_pack_config_refuses_what_pulumi_refuses(document, reason):
    from gpucloud.policy import PackConfig, PolicyConfigError

    with pytest.raises(PolicyConfigError, match=reason):
        PackConfig.from_document(document, [rule.name for rule in RULES])


def test_the_s3_gateway_endpoint_rule_does_not_decide_on_a_policy_unknown_during_preview():
    from gpucloud.policy import UNKNOWN, UnknownInputError

    endpoint = {"serviceName": "com.amazonaws.us-east-1.s3", "vpcEndpointType": "Gateway", "policy": UNKNOWN}
    with pytest.raises(UnknownInputError) as error:
        RULES_BY_NAME["s3-gateway-endpoint-restricted"].validate(VPC_ENDPOINT, endpoint, [].append, PolicyConfig())
    assert error.value.path == ("policy",)


def test_the_interface_endpoint_rule_does_not_decide_on_a_policy_unknown_during_preview():
    """The kms endpoint's policy names the project key, unknown until the key exists."""
    from gpucloud.policy import UNKNOWN, UnknownInputError

    endpoint = {"serviceName": "com.amazonaws.us-east-1.kms", "vpcEndpointType": "Interface", "policy": UNKNOWN}
    with pytest.raises(UnknownInputError) as error:
        RULES_BY_NAME["vpc-endpoint-has-policy"].validate(VPC_ENDPOINT, endpoint, [].append, PolicyConfig())
    assert error.value.path == ("policy",)


def test_a_rule_that_needs_an_unknown_input_does_not_decide():
    from gpucloud.policy import UNKNOWN, UnknownInputError

    with pytest.raises(UnknownInputError) as error:
        evaluate([planned(VOLUME, "v", {"size": 1, "encrypted": UNKNOWN, "tags": TAGS}, protect=True)])
    assert error.value.path == ("encrypted",)


def test_each_rule_applies_to_the_types_of_its_cases():
    for case in RESOURCE_CASES:
        if case.violates:
            assert RULES_BY_NAME[case.policy].applies_to(case.type), (case.policy, case.type)
    for case in STACK_CASES:
        for resource in case.resources:
            if resource.urn in case.flagged_urns:
                assert RULES_BY_NAME[case.policy].applies_to(resource.type), (case.policy, resource.type)
    assert not RULES_BY_NAME["ebs-encrypted-with-cmk"].applies_to("aws:kms/key:Key")


def test_instance_on_a_launch_template_with_its_own_metadata_options_is_judged_on_them():
    from policy_cases import INSTANCE, instance

    props = instance(launchTemplate={"id": "lt-0abc"}, metadataOptions={"httpTokens": "optional"})
    messages: list[str] = []

    RULES_BY_NAME["imdsv2-required"].validate(INSTANCE, props, messages.append, PolicyConfig())

    assert len(messages) == 1 and "allows IMDSv1" in messages[0]


def test_known_world_open_source_after_an_unknown_one_is_reported():
    from gpucloud.policy import UNKNOWN
    from gpucloud.policy.values import known_only
    from policy_cases import SECURITY_GROUP_RULE

    rule = known_only({"type": "ingress", "protocol": "tcp", "fromPort": 22, "toPort": 22,
                       "cidrBlocks": [UNKNOWN, "0.0.0.0/0"]})
    messages: list[str] = []

    RULES_BY_NAME["no-world-open-ingress"].validate(SECURITY_GROUP_RULE, rule, messages.append, PolicyConfig())

    assert len(messages) == 1 and "open to 0.0.0.0/0" in messages[0]


def test_required_tags_are_the_stacks_own_when_its_config_names_them():
    messages: list[str] = []

    RULES_BY_NAME["required-tags"].validate(VOLUME, {"size": 100, "tags": TAGS}, messages.append,
                                            PolicyConfig(required_tags=("Team",)))

    assert len(messages) == 1 and "missing the required tags Team" in messages[0]
