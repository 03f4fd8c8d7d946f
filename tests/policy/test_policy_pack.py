"""The CrossGuard pack in policies/: each policy, called the way the Pulumi engine calls it."""

from __future__ import annotations

import importlib
import inspect
import runpy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import (
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    unknown_checking_proxy,
)

from gpucloud.policy import RULES, PlannedResource
from policy_cases import (
    CMK_ARN,
    GPU_GROUP,
    GPU_TEMPLATE,
    RESOURCE_CASES,
    SCALING_POLICY,
    SECURITY_GROUP_RULE,
    STACK_CASES,
    TAGS,
    Case,
    StackCase,
    encrypted_device,
    launch_template,
)

PACK_DIR = Path(__file__).resolve().parents[2] / "policies"


PACK = importlib.import_module("gpucloud.policy.crossguard")


def build(cls: type, **values: Any) -> Any:
    """Construct an SDK argument object by parameter name, passing only what this SDK version takes."""
    parameters = inspect.signature(cls.__init__).parameters
    missing = [
        name
        for name, parameter in parameters.items()
        if name != "self" and parameter.default is inspect.Parameter.empty and name not in values
    ]
    assert not missing, f"{cls.__name__} now also requires {missing}"
    return cls(**{name: value for name, value in values.items() if name in parameters})


def resource_options(protect: bool = False) -> PolicyResourceOptions:
    return build(
        PolicyResourceOptions,
        protect=protect,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=build(PolicyCustomTimeouts, create_seconds=0, update_seconds=0, delete_seconds=0),
        additional_secret_outputs=[],
        parent=None,
    )


def resource_args(
    resource_type: str, props: dict[str, Any], config: dict[str, Any] | None = None
) -> ResourceValidationArgs:
    return build(
        ResourceValidationArgs,
        resource_type=resource_type,
        props=unknown_checking_proxy(props),  # the engine hands policies this read-only proxy
        urn=f"urn:pulumi:dev::gpu-cloud::{resource_type}::under-test",
        name="under-test",
        opts=resource_options(),
        provider=None,
        config=config,
        stack_tags={},
    )


def policy_resource(resource: PlannedResource) -> PolicyResource:
    return build(
        PolicyResource,
        resource_type=resource.type,
        props=unknown_checking_proxy(dict(resource.props)),
        urn=resource.urn,
        name=resource.name,
        opts=resource_options(protect=bool(resource.options.get("protect"))),
        provider=None,
        parent=None,
        dependencies=[],
        property_dependencies={},
    )


def stack_args(resources: list[PolicyResource], config: dict[str, Any] | None = None) -> StackValidationArgs:
    return build(StackValidationArgs, resources=resources, config=config, stack_tags={})


def collect(policy: Any, args: Any) -> list[tuple[str, str | None]]:
    reports: list[tuple[str, str | None]] = []
    result = policy.validate(args, lambda message, urn=None: reports.append((message, urn)))
    assert result is None, "validations are synchronous"
    return reports


def analyzer_service() -> Any:
    """The gRPC servicer PolicyPack(...) would serve to the CLI (private to pulumi-policy)."""
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    return build(
        _PolicyAnalyzerServicer,
        name="gpu-cloud",
        version="0.1.0",
        policies=PACK.POLICIES,
        enforcement_level=EnforcementLevel.ADVISORY,
        initial_config=None,
        description=None,
        display_name=None,
        readme=None,
        provider=None,
        tags=None,
        repository=None,
    )


def test_pack_wraps_every_rule_with_its_kind_and_enforcement_level():
    assert [policy.name for policy in PACK.POLICIES] == [rule.name for rule in RULES]
    for rule in RULES:
        policy = PACK.POLICIES_BY_NAME[rule.name]
        assert policy.description == rule.description
        expected_level = (
            EnforcementLevel.MANDATORY if rule.enforcement_level == "mandatory" else EnforcementLevel.ADVISORY
        )
        assert policy.enforcement_level == expected_level
        expected_kind = (
            StackValidationPolicy
            if rule.name in ("gpu-group-has-scale-in-path", "data-volume-retained", "asg-spot-template-rebalanced",
                             "capacity-block-on-demand-one-type", "capacity-reservations-used",
                             "load-balancer-tls-when-internet-facing")
            else ResourceValidationPolicy
        )
        assert isinstance(policy, expected_kind)


def test_group_size_cap_is_a_config_schema_property_with_default_16():
    schema = PACK.POLICIES_BY_NAME["asg-bounded-and-rebalanced"].config_schema
    assert schema.properties["maxGroupSize"]["default"] == 16
    assert schema.properties["maxGroupSize"]["type"] == "integer"


@pytest.mark.parametrize("case", RESOURCE_CASES, ids=lambda case: f"{case.policy}:{case.id}")
def test_pack_policy_reports_only_violations(case: Case):
    reports = collect(PACK.POLICIES_BY_NAME[case.policy], resource_args(case.type, case.props))
    if case.violates:
        assert reports, f"{case.policy} let {case.id} through"
        assert any(case.message_hint in message for message, _ in reports)
    else:
        assert reports == []


@pytest.mark.parametrize("case", STACK_CASES, ids=lambda case: f"{case.policy}:{case.id}")
def test_pack_stack_policy_reports_exactly_the_offending_resources(case: StackCase):
    args = stack_args([policy_resource(resource) for resource in case.resources])
    reports = collect(PACK.POLICIES_BY_NAME[case.policy], args)
    assert {urn for _, urn in reports} == case.flagged_urns


def test_pack_reads_max_group_size_from_policy_config():
    case = next(case for case in RESOURCE_CASES if case.id == "group-over-cap")
    policy = PACK.POLICIES_BY_NAME["asg-bounded-and-rebalanced"]
    assert collect(policy, resource_args(case.type, case.props, config={"maxGroupSize": 32}))
    assert collect(policy, resource_args(case.type, case.props, config={"maxGroupSize": 64.0})) == []


def analyze(resource_type: str, props: dict[str, Any]) -> dict[str, list[tuple[int, str]]]:
    """One Analyze call as the CLI makes it during preview: policy name -> (level, message) reported.

    Unknowns travel as pulumi-policy's sentinel strings, as in the engine's protobuf Struct.
    """
    from google.protobuf import struct_pb2
    from pulumi.runtime.proto import analyzer_pb2

    properties = struct_pb2.Struct()
    properties.update(props)
    request = analyzer_pb2.AnalyzeRequest(
        type=resource_type, properties=properties, urn=f"urn:pulumi:dev::gpu-cloud::{resource_type}::r", name="r"
    )
    found: dict[str, list[tuple[int, str]]] = {}
    for diagnostic in analyzer_service().Analyze(request, None).diagnostics:
        found.setdefault(diagnostic.policyName, []).append((diagnostic.enforcementLevel, diagnostic.message))
    return found


def cannot_run(found: dict[str, list[tuple[int, str]]], policy: str) -> bool:
    from pulumi.runtime.proto import analyzer_pb2

    return found.get(policy, []) and all(
        level == analyzer_pb2.ADVISORY and "during preview" in message for level, message in found[policy]
    )


VOLUME_TYPE = "aws:ebs/volume:Volume"


def test_unknown_key_of_an_encrypted_volume_is_this_stacks_key_during_preview():
    found = analyze(VOLUME_TYPE, {"size": 100, "encrypted": True, "kmsKeyId": UNKNOWN_STRING_VALUE, "tags": TAGS})
    assert "ebs-encrypted-with-cmk" not in found
    template = launch_template(blockDeviceMappings=[encrypted_device(kmsKeyId=UNKNOWN_STRING_VALUE)])
    assert "ebs-encrypted-with-cmk" not in analyze("aws:ec2/launchTemplate:LaunchTemplate", template)


def test_unknown_key_without_encryption_still_fails_during_preview():
    from pulumi.runtime.proto import analyzer_pb2

    for props in (
        {"size": 100, "encrypted": False, "kmsKeyId": UNKNOWN_STRING_VALUE, "tags": TAGS},
        {"size": 100, "kmsKeyId": UNKNOWN_STRING_VALUE, "tags": TAGS},
    ):
        found = analyze(VOLUME_TYPE, props)
        assert [level for level, _ in found["ebs-encrypted-with-cmk"]] == [analyzer_pb2.MANDATORY]
        assert "not encrypted" in found["ebs-encrypted-with-cmk"][0][1]


def test_unknown_encryption_flag_cannot_run_during_preview():
    found = analyze(VOLUME_TYPE, {"size": 100, "encrypted": UNKNOWN_BOOLEAN_VALUE, "kmsKeyId": CMK_ARN, "tags": TAGS})
    assert cannot_run(found, "ebs-encrypted-with-cmk")
    assert "boolean value at .encrypted can't be known during preview" in found["ebs-encrypted-with-cmk"][0][1]


def test_known_world_open_source_fails_whatever_else_is_unknown():
    from pulumi.runtime.proto import analyzer_pb2

    rule = {"type": "ingress", "protocol": "tcp", "fromPort": 22, "toPort": 22, "securityGroupId": "sg-1"}
    found = analyze(SECURITY_GROUP_RULE, {**rule, "cidrBlocks": ["0.0.0.0/0", UNKNOWN_STRING_VALUE]})
    assert [level for level, _ in found["no-world-open-ingress"]] == [analyzer_pb2.MANDATORY]
    found = analyze(SECURITY_GROUP_RULE, {**rule, "cidrBlocks": ["10.0.0.0/16", UNKNOWN_STRING_VALUE]})
    assert cannot_run(found, "no-world-open-ingress")
    assert ".cidrBlocks" in found["no-world-open-ingress"][0][1]


def test_unknown_provider_tags_decide_only_when_tags_already_comply():
    from pulumi.runtime.proto import analyzer_pb2

    assert "required-tags" not in analyze(VOLUME_TYPE, {"size": 1, "tags": TAGS, "tagsAll": UNKNOWN_OBJECT_VALUE})
    partial = {"size": 1, "tags": {"Project": "vision"}, "tagsAll": UNKNOWN_OBJECT_VALUE}
    assert cannot_run(analyze(VOLUME_TYPE, partial), "required-tags")
    found = analyze(VOLUME_TYPE, {"size": 1, "tags": {"Project": "vision"}, "tagsAll": {"Project": "vision"}})
    assert [level for level, _ in found["required-tags"]] == [analyzer_pb2.MANDATORY]


def test_unknown_policy_arn_is_a_policy_of_this_stack():
    attachment = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
    assert "iam-least-privilege" not in analyze(attachment, {"role": "r", "policyArn": UNKNOWN_STRING_VALUE})


def test_policy_document_built_with_apply_is_checked_only_at_up():
    found = analyze("aws:iam/rolePolicy:RolePolicy", {"role": "r", "policy": UNKNOWN_STRING_VALUE})
    assert cannot_run(found, "iam-least-privilege")


def test_stack_policy_links_a_policy_to_an_unnamed_group_through_property_dependencies():
    group = policy_resource(
        PlannedResource(
            GPU_GROUP.urn, GPU_GROUP.type, GPU_GROUP.name, {**GPU_GROUP.props, "name": UNKNOWN_STRING_VALUE}
        )
    )
    scaling = policy_resource(
        PlannedResource(
            "urn:pulumi:dev::gpu-cloud::aws:autoscaling/policy:Policy::gpu-util",
            SCALING_POLICY,
            "gpu-util",
            {
                "autoscalingGroupName": UNKNOWN_STRING_VALUE,
                "policyType": "TargetTrackingScaling",
                "targetTrackingConfiguration": {"targetValue": 60.0},
            },
        )
    )
    scaling.property_dependencies = {"autoscalingGroupName": [group]}
    policy = PACK.POLICIES_BY_NAME["gpu-group-has-scale-in-path"]
    assert collect(policy, stack_args([policy_resource(GPU_TEMPLATE), group, scaling])) == []
    scaling.property_dependencies = {}
    assert [urn for _, urn in collect(policy, stack_args([policy_resource(GPU_TEMPLATE), group, scaling]))] == [
        GPU_GROUP.urn
    ]


def test_main_serves_the_pack_only_when_run_by_the_engine(monkeypatch):
    served: list[dict[str, Any]] = []
    monkeypatch.syspath_prepend(str(PACK_DIR))  # the engine runs the pack directory the same way
    monkeypatch.setattr("pulumi_policy.PolicyPack", lambda **kwargs: served.append(kwargs))
    runpy.run_path(str(PACK_DIR / "__main__.py"), run_name="imported_by_a_test")
    assert served == []
    runpy.run_path(str(PACK_DIR / "__main__.py"), run_name="__main__")
    assert len(served) == 1
    assert served[0]["name"] == "gpu-cloud"
    assert [policy.name for policy in served[0]["policies"]] == [rule.name for rule in RULES]


def test_policy_project_file_runs_python_in_a_managed_virtualenv():
    project = yaml.safe_load((PACK_DIR / "PulumiPolicy.yaml").read_text())
    assert project["runtime"] == {"name": "python", "options": {"virtualenv": "venv"}}
    assert project["version"]
    requirements = (PACK_DIR / "requirements.txt").read_text().splitlines()
    assert "-e ..[policy]" in requirements
    assert any(line.startswith("pulumi-policy") for line in requirements)


def test_engine_entry_points_accept_the_pack():
    """Drive the analyzer service the CLI talks to: schema export and one Analyze call."""
    from google.protobuf import json_format, struct_pb2
    from pulumi.runtime.proto import analyzer_pb2

    servicer = analyzer_service()
    info = servicer.GetAnalyzerInfo(None, None)
    assert {policy.name for policy in info.policies} == {rule.name for rule in RULES}
    exported = next(policy for policy in info.policies if policy.name == "asg-bounded-and-rebalanced")
    assert json_format.MessageToDict(exported.configSchema)["properties"]["maxGroupSize"]["default"] == 16

    properties = struct_pb2.Struct()
    properties.update(
        launch_template(
            metadataOptions={"httpTokens": "optional"},
            networkInterfaces=[{"deviceIndex": 0, "associatePublicIpAddress": "true"}],
        )
    )
    request = analyzer_pb2.AnalyzeRequest(
        type="aws:ec2/launchTemplate:LaunchTemplate",
        properties=properties,
        urn="urn:pulumi:dev::gpu-cloud::aws:ec2/launchTemplate:LaunchTemplate::lt",
        name="lt",
    )
    response = servicer.Analyze(request, None)
    flagged = {diagnostic.policyName for diagnostic in response.diagnostics}
    assert flagged == {"imdsv2-required", "no-public-ip"}
    assert all(diagnostic.enforcementLevel == analyzer_pb2.MANDATORY for diagnostic in response.diagnostics)


def test_engine_stack_analysis_links_policies_through_property_dependencies():
    """AnalyzeStack as the CLI sends it during preview: the group's name is still unknown."""
    from google.protobuf import struct_pb2
    from pulumi.runtime.proto import analyzer_pb2

    servicer = analyzer_service()

    def analyzer_resource(
        resource: PlannedResource, protect: bool = False, depends: dict[str, list[str]] | None = None
    ) -> Any:
        properties = struct_pb2.Struct()
        properties.update(dict(resource.props))
        return analyzer_pb2.AnalyzerResource(
            type=resource.type,
            properties=properties,
            urn=resource.urn,
            name=resource.name,
            options=analyzer_pb2.AnalyzerResourceOptions(protect=protect),
            propertyDependencies={
                prop: analyzer_pb2.AnalyzerPropertyDependencies(urns=urns) for prop, urns in (depends or {}).items()
            },
        )

    group = PlannedResource(
        GPU_GROUP.urn, GPU_GROUP.type, GPU_GROUP.name, {**GPU_GROUP.props, "name": UNKNOWN_STRING_VALUE}
    )
    scaling = PlannedResource(
        "urn:pulumi:dev::gpu-cloud::aws:autoscaling/policy:Policy::gpu-util",
        SCALING_POLICY,
        "gpu-util",
        {
            "autoscalingGroupName": UNKNOWN_STRING_VALUE,
            "policyType": "TargetTrackingScaling",
            "targetTrackingConfiguration": {"targetValue": 60},
        },
    )
    volume = PlannedResource(
        "urn:pulumi:dev::gpu-cloud::aws:ebs/volume:Volume::data", "aws:ebs/volume:Volume", "data", {"size": 500}
    )

    linked = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_resource(GPU_TEMPLATE),
            analyzer_resource(group),
            analyzer_resource(scaling, depends={"autoscalingGroupName": [GPU_GROUP.urn]}),
            analyzer_resource(volume, protect=True),
        ]
    )
    assert list(servicer.AnalyzeStack(linked, None).diagnostics) == []

    unlinked = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_resource(GPU_TEMPLATE),
            analyzer_resource(group),
            analyzer_resource(scaling),
            analyzer_resource(volume),
        ]
    )
    diagnostics = servicer.AnalyzeStack(unlinked, None).diagnostics
    assert {(diagnostic.policyName, diagnostic.urn) for diagnostic in diagnostics} == {
        ("gpu-group-has-scale-in-path", GPU_GROUP.urn),
        ("data-volume-retained", volume.urn),
    }
    assert all(diagnostic.enforcementLevel == analyzer_pb2.ADVISORY for diagnostic in diagnostics)


def test_unknown_reported_with_the_engines_own_type_and_path():
    from gpucloud.policy import UnknownInputError

    props = unknown_checking_proxy({"ingress": [{"cidrBlocks": UNKNOWN_ARRAY_VALUE}]})
    found = PACK._engine_unknown(props, UnknownInputError(("ingress", 0, "cidrBlocks")))
    assert found.message == "Array value at .ingress.0.cidrBlocks can't be known during preview"
    derived = PACK._engine_unknown(props, UnknownInputError(("Owner",)))
    assert derived.message == "string value at .Owner can't be known during preview"
