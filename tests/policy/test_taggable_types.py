"""Taggable resource types come from the installed pulumi-aws SDK, not a hand-kept list."""

from __future__ import annotations

import time

import pytest

from gpucloud.policy import taggable
from gpucloud.policy.taggable import SdkUnavailableError, is_taggable


@pytest.mark.parametrize(
    "type_token",
    [
        "aws:ebs/volume:Volume",
        "aws:ec2/launchTemplate:LaunchTemplate",
        "aws:autoscaling/group:Group",
        "aws:kms/key:Key",
        "aws:iam/role:Role",
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "aws:lambda/function:Function",  # lives in pulumi_aws.lambda_
    ],
)
def test_types_with_a_tags_input_are_taggable(type_token):
    assert is_taggable(type_token)


@pytest.mark.parametrize(
    "type_token",
    [
        "aws:iam/rolePolicy:RolePolicy",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "aws:ec2/securityGroupRule:SecurityGroupRule",
        "aws:autoscaling/schedule:Schedule",
        "aws:autoscaling/policy:Policy",
        "aws:kms/alias:Alias",
        "aws:ec2/noSuchThing:NoSuchThing",
        "pulumi:providers:aws",
        "gpu-cloud:index:GpuInstanceGroup",
    ],
)
def test_types_without_tags_are_not_taggable(type_token):
    assert not is_taggable(type_token)


def test_repeated_lookups_are_cached():
    is_taggable("aws:ec2/instance:Instance")
    started = time.perf_counter()
    for _ in range(10_000):
        is_taggable("aws:ec2/instance:Instance")
    assert time.perf_counter() - started < 0.5


def test_renamed_type_missing_from_the_registry_is_located_by_its_token():
    assert "aws:s3/BucketObject:BucketObject" not in taggable._registered_classes()  # an alias of aws:s3/bucketObject
    assert is_taggable("aws:s3/BucketObject:BucketObject")


def test_aws_token_that_names_no_module_and_class_is_not_taggable():
    assert not is_taggable("aws:malformed")


def test_missing_sdk_is_an_error_not_a_guess(monkeypatch):
    monkeypatch.setattr(taggable.importlib.util, "find_spec", lambda name: None)

    with pytest.raises(SdkUnavailableError, match="pulumi_aws is not installed"):
        taggable._registered_classes.__wrapped__()


def test_the_sdk_registration_table_maps_tokens_to_their_module_and_class():
    classes = taggable._registered_classes()
    assert classes["aws:ec2/instance:Instance"] == ("pulumi_aws.ec2", "Instance")
    assert classes["aws:lambda/function:Function"] == ("pulumi_aws.lambda_", "Function")


@pytest.mark.parametrize(("token", "located"), [
    ("aws:index:SomethingNew", ("pulumi_aws", "SomethingNew")),
    ("aws:lambda/somethingNew:SomethingNew", ("pulumi_aws.lambda_", "SomethingNew")),
    ("aws:only-two", None),
    ("gcp:compute/instance:Instance", None),
])
def test_tokens_missing_from_the_table_follow_the_sdk_naming_scheme(token, located):
    assert taggable._locate(token) == located


@pytest.mark.parametrize("token", ["aws:ec2/nothingLikeThis:NothingLikeThis", "aws:only-two", "random:index/x:X"])
def test_unknown_types_are_not_taggable_as_false_not_none(token):
    assert is_taggable(token) is False


def test_sdk_without_a_registration_table_leaves_every_token_to_the_naming_scheme(monkeypatch, tmp_path):
    init = tmp_path / "__init__.py"
    init.write_text("# an SDK build without resource_modules\n", encoding="utf-8")
    monkeypatch.setattr(taggable.importlib.util, "find_spec", lambda name: type("Spec", (), {"origin": str(init)}))

    assert taggable._registered_classes.__wrapped__() == {}
