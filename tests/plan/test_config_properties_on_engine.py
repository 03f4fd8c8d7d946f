"""Property-based tests of the offline plan: generated valid configs plan with no mandatory policy
violation, and every value they carry reaches AWS intact: tags, user data, IAM documents."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shlex
from typing import Any

import boto3
import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from config_strategies import (
    ALNUM,
    ENGINE_SETTINGS,
    GPU_TYPES,
    GROUP_SHAPES,
    TAG_CHARACTERS,
    aws_tag_value_problem,
    shaped,
    stack_values,
)
from gpucloud.config import StackConfig, StackSettings
from gpucloud.plan import plan_program
from gpucloud.policy.iam_lint import has_medium_or_worse, lint_policy
from gpucloud.program import build
from support import private_subnets, settings_for


tag_values_with_punctuation = shaped((ALNUM, 1, 1), (TAG_CHARACTERS + " ", 0, 30), ("/=+-@: ", 1, 1))
prefixes_with_punctuation = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9=\-_.]{0,10}(/[A-Za-z0-9][A-Za-z0-9=\-_.]{0,10}){0,2}/", fullmatch=True)


@st.composite
def engine_stack_values(draw, first_shape: str) -> dict[str, Any]:
    values = draw(stack_values(types=st.sampled_from(GPU_TYPES), engine=True, first_shape=first_shape))
    values["costCenter"] = draw(tag_values_with_punctuation)
    if "data" in values and draw(st.booleans()):
        values["data"]["writePrefixes"] = draw(st.lists(prefixes_with_punctuation, min_size=1, max_size=2))
    return values


def tags_of(resource) -> dict[str, str] | None:
    tags = resource.inputs.get("tags")
    if isinstance(tags, list):
        return {tag["key"]: tag["value"] for tag in tags}
    return tags


def decoded_user_data(encoded: str) -> dict[str, Any]:
    text = gzip.decompress(base64.b64decode(encoded, validate=True)).decode("utf-8")
    assert text.startswith("#cloud-config\n")
    return yaml.safe_load(text)


def check_user_data(resource, settings, group_config) -> None:
    config = settings.config
    document = decoded_user_data(resource.inputs["userData"])
    files = {entry["path"]: entry["content"] for entry in document["write_files"]}
    node = json.loads(files["/etc/gpucloud/node.json"])
    assert node["project"] == config.project
    assert node["group_name"] == f"gpu-cloud-{settings.name_base}-{group_config.name}"
    assert node["region"] == settings.region
    writes = config.data.write_prefixes if config.data else []
    assert node["checkpoint_bucket"] == (config.data.bucket if writes else None)
    assert node["checkpoint_prefix"] == (writes[0].rstrip("/") if writes else None)
    assert node["persistent_volume_tag_value"] == (node["group_name"] if group_config.persistent_volume_gib else None)
    checkpoint = group_config.checkpoint
    assert node["checkpoint_command"] == (list(checkpoint.command) if checkpoint.command else None)
    assert (node["checkpoint_dir"], node["checkpoint_timeout_s"]) == (checkpoint.directory, checkpoint.timeout_seconds)
    environment = dict(shlex.split(line)[0].split("=", 1) for line in files["/etc/gpucloud/bootstrap.env"].splitlines())
    assert environment["REGION"] == settings.region
    assert environment["CHECKPOINT_DIR"] == node["checkpoint_dir"]


def check_role_policy(resource, config: StackConfig) -> None:
    document = json.loads(resource.inputs["policy"])
    resources = [
        arn
        for statement in document["Statement"]
        for arn in ([statement["Resource"]] if isinstance(statement["Resource"], str) else statement["Resource"])
    ]
    for arn in resources:
        assert arn == "*" or re.fullmatch(r"arn:aws:[a-z0-9\-]+:[a-z0-9\-]*:\d{0,12}:[A-Za-z0-9_.:/=+\-*@]+", arn), arn
    if config.data:
        bucket = config.data.bucket
        for prefix in (*config.data.read_prefixes, *config.data.write_prefixes):
            assert f"arn:aws:s3:::{bucket}/{prefix}*" in resources
        listing = next(s for s in document["Statement"] if s.get("Sid") == "ListOnlyGrantedPrefixes")
        assert sorted(listing["Condition"]["StringLike"]["s3:prefix"]) == sorted(
            {f"{prefix}*" for prefix in (*config.data.read_prefixes, *config.data.write_prefixes)}
        )
    else:
        assert not any(":s3:" in arn for arn in resources if ":s3:::gpu-cloud-" not in arn)
    [bundle] = [s for s in document["Statement"] if s.get("Sid") == "FetchAgentBundle"]
    assert bundle["Action"] == "s3:GetObject" and bundle["Resource"].endswith("/agent/*")
    findings = lint_policy(document)
    assert not has_medium_or_worse(findings), [finding.describe() for finding in findings]


@pytest.mark.parametrize("shape", GROUP_SHAPES)
@ENGINE_SETTINGS
@given(data=st.data())
def test_valid_config_plans_clean_and_reaches_aws_verbatim(shape, data):
    values = data.draw(engine_stack_values(shape), label="values")
    subnet_zones = data.draw(st.sampled_from(["", "a", "ab", "cab"]), label="own subnets in zones")
    explicit_ami = data.draw(st.booleans(), label="explicit amiId")
    event(f"network: {'subnets in zones ' + subnet_zones if subnet_zones else 'default VPC'}")
    event(f"AMI: {'explicit amiId' if explicit_ami else 'Deep Learning AMI parameter'}")
    planned: list[StackSettings] = []

    def program():
        """Subnets and the AMI must exist in the plan's moto account, so they are made as it runs."""
        ec2 = boto3.client("ec2", region_name="us-east-1")
        if subnet_zones:
            values["network"] = {"subnetIds": private_subnets(ec2, "10.60.0.0/16", subnet_zones)}
        if explicit_ami:
            ubuntu = [{"Name": "architecture", "Values": ["x86_64"]}, {"Name": "name", "Values": ["*ubuntu*"]}]
            images = ec2.describe_images(Owners=["amazon"], Filters=ubuntu)["Images"]  # not the default image
            for group_values in values["groups"]:
                group_values["amiId"] = sorted(image["ImageId"] for image in images)[-1]
        planned.append(settings_for(values, stack="prop"))
        build(planned[0])

    plan = plan_program(program, stack="prop", region="us-east-1")
    [settings] = planned
    config = settings.config
    event(f"groups: {len(config.groups)}")
    for group_config in config.groups:
        event("multi-node group" if group_config.multi_node else "persistent-volume group" if group_config.persistent_volume_gib else "plain group")
    event("data: " + ("read/write prefixes" if config.data and config.data.write_prefixes else "read prefixes" if config.data else "none"))
    assert [vars(v) for v in plan.policy_violations if v.mandatory] == []
    for resource in plan.resources:
        if resource.custom and not resource.validated:
            event(f"not validated by the engine: {resource.type}")
    groups = {group_config.name: group_config for group_config in config.groups}
    templates = role_policies = 0
    for resource in plan.resources:
        if not resource.custom:
            continue
        tags = tags_of(resource)
        sent = [tags] if tags is not None else []
        sent += [specification["tags"] for specification in resource.inputs.get("tagSpecifications") or []]
        for tag_set in sent:
            refused = {value: problem for value in tag_set.values() if (problem := aws_tag_value_problem(value))}
            assert refused == {}, (resource.urn, refused)
        if tags is not None:
            for key in ("Project", "Owner", "CostCenter"):
                assert tags[key] == config.tags[key], (resource.urn, key)
            if "GpuGroup" in tags:
                assert tags["GpuGroup"] in groups
        if resource.type == "aws:ec2/launchTemplate:LaunchTemplate":
            templates += 1
            check_user_data(resource, settings, groups[tags["GpuGroup"]])
            for specification in resource.inputs["tagSpecifications"]:
                assert specification["tags"]["CostCenter"] == config.cost_center
        if resource.type == "aws:iam/rolePolicy:RolePolicy" and resource.inputs["name"] == "gpu-cloud-node-access":
            role_policies += 1
            check_role_policy(resource, config)
        for key in ("policy", "assumeRolePolicy"):
            if isinstance(resource.inputs.get(key), str):
                json.loads(resource.inputs[key])
        if resource.type == "aws:autoscaling/schedule:Schedule":
            scheduled = {
                (f"gpu-cloud-{settings.name_base}-{g.name}", s.name): s for g in config.groups for s in g.scaling.schedules
            }[resource.inputs["autoscalingGroupName"], resource.inputs["scheduledActionName"]]
            assert resource.inputs["recurrence"] == scheduled.recurrence
            assert resource.inputs["timeZone"] == scheduled.time_zone
    assert templates >= len(config.groups) and role_policies == 1
