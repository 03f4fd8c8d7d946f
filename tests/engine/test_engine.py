"""The moto engine itself: unknown types fail loudly, references are checked, gaps are marked."""

from __future__ import annotations

import ast
import asyncio
import logging

import pulumi
import pulumi_aws as aws
import pytest
from botocore.exceptions import ClientError, ParamValidationError

from gpucloud.testing import BrokenReferenceError, UnsupportedResourceError, run_program


def test_unknown_resource_type_names_the_type(account):
    def program():
        aws.sqs.Queue("jobs")

    with pytest.raises(UnsupportedResourceError, match="aws:sqs/queue:Queue"):
        run_program(program, account)


def test_unknown_invoke_names_the_token(account):
    def program():
        aws.ec2.get_key_pair(key_name="x")

    with pytest.raises(UnsupportedResourceError, match="aws:ec2/getKeyPair:getKeyPair"):
        run_program(program, account)


def test_volume_with_a_missing_kms_key_is_refused(account):
    def program():
        aws.ebs.Volume(
            "data",
            availability_zone="us-east-1a",
            size=10,
            encrypted=True,
            kms_key_id="arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000",
        )

    with pytest.raises(BrokenReferenceError, match="does not exist"):
        run_program(program, account)
    assert account.client("ec2").describe_volumes()["Volumes"] == []


def test_botocore_validates_every_call_against_the_aws_model(account):
    def program():
        aws.ebs.Volume("data", availability_zone="us-east-1a", size="ten", type="gp3")

    with pytest.raises(ParamValidationError, match="Size"):
        run_program(program, account)


def test_unretrieved_exceptions_go_to_the_debug_log_without_formatting_a_traceback(account, monkeypatch, caplog):
    """A failed run leaves futures whose exception nobody retrieved; the collector may reap them
    inside someone else's AST conversion, and on Python 3.11 a traceback formatted there breaks
    that conversion (see the engine's exception handler). They repeat the run's error, so they
    stay out of the output (debug log only)."""
    run_program(lambda: None, account)
    future = asyncio.get_event_loop().create_future()
    try:
        account.client("ec2").create_volume(AvailabilityZone="us-east-1a", Size="ten")
    except ParamValidationError as error:
        future.set_exception(error)

    parsed: list[str] = []
    with monkeypatch.context() as patched, caplog.at_level(logging.DEBUG, logger="gpucloud.testing.account"):
        patched.setattr(ast, "parse", lambda source, *args, **kwargs: parsed.append(source))
        del future

    assert parsed == [], "the finalizer formatted a traceback, which calls ast.parse"
    [report] = [record for record in caplog.records if "never retrieved" in record.getMessage()]
    assert report.exc_info is None and report.levelno == logging.DEBUG
    assert "ParamValidationError: Parameter validation failed" in report.getMessage()


def test_resources_come_back_with_moto_ids_and_arns(account):
    def program():
        key = aws.kms.Key("key", description="demo")
        pulumi.export("arn", key.arn)

    deployment = run_program(program, account)
    [key] = account.client("kms").list_keys()["Keys"]
    assert deployment.outputs["arn"] == key["KeyArn"]


def test_urns_are_the_ones_the_pulumi_engine_gives(account):
    """`resource.NewURN`: the parent's whole qualified type prefixes the type, the root stack never does."""

    class Outer(pulumi.ComponentResource):
        def __init__(self, name):
            super().__init__("demo:index:Outer", name)
            inner = pulumi.ComponentResource("demo:index:Inner", f"{name}-inner", opts=pulumi.ResourceOptions(parent=self))
            aws.kms.Key(f"{name}-key", opts=pulumi.ResourceOptions(parent=inner))

    def program():
        Outer("outer")
        aws.kms.Key("top")

    deployment = run_program(program, account, project="proj", stack="dev")

    assert sorted(resource.urn for resource in deployment.resources) == [
        "urn:pulumi:dev::proj::aws:kms/key:Key::top",
        "urn:pulumi:dev::proj::demo:index:Outer$demo:index:Inner$aws:kms/key:Key::outer-key",
        "urn:pulumi:dev::proj::demo:index:Outer$demo:index:Inner::outer-inner",
        "urn:pulumi:dev::proj::demo:index:Outer::outer",
    ]


def test_group_on_a_plain_launch_template_uses_that_template(account):
    """A group's own `launchTemplate` (not a mixed instances policy) names the template by `id` and `version`."""
    ubuntu = [{"Name": "architecture", "Values": ["x86_64"]}, {"Name": "name", "Values": ["*ubuntu*"]}]
    image = account.client("ec2").describe_images(Owners=["amazon"], Filters=ubuntu)["Images"][0]["ImageId"]

    def program():
        template = aws.ec2.LaunchTemplate("nodes", image_id=image, instance_type="g5.xlarge")
        aws.autoscaling.Group(
            "nodes",
            min_size=0,
            max_size=1,
            availability_zones=["us-east-1a"],
            launch_template=aws.autoscaling.GroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str)),
        )

    run_program(program, account)

    [template] = account.client("ec2").describe_launch_templates()["LaunchTemplates"]
    [group] = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert group["LaunchTemplate"]["LaunchTemplateId"] == template["LaunchTemplateId"]
    assert group["LaunchTemplate"]["Version"] == "1"


def test_placement_groups_are_recorded_but_marked_not_validated(account):
    def program():
        aws.ec2.PlacementGroup("nccl", strategy="cluster")

    deployment = run_program(program, account)
    [record] = deployment.unvalidated
    assert record.type == "aws:ec2/placementGroup:PlacementGroup"
    assert "moto does not implement" in record.note


def efa_template(group: str, cards: int):
    """A program declaring a p5 launch template with one EFA interface per network card, all in `group`."""
    def program():
        aws.ec2.LaunchTemplate(
            "efa",
            instance_type="p5.48xlarge",
            network_interfaces=[
                {"device_index": 0 if card == 0 else 1, "network_card_index": card, "interface_type": "efa",
                 "security_groups": [group]}
                for card in range(cards)
            ],
        )
    return program


def test_a_launch_template_whose_network_cards_name_a_missing_group_is_refused(account):
    with pytest.raises(ClientError, match="InvalidGroup.NotFound.*sg-0123456789abcdef0"):
        run_program(efa_template("sg-0123456789abcdef0", cards=4), account)
    assert account.client("ec2").describe_launch_templates()["LaunchTemplates"] == []


def test_an_efa_template_checks_the_groups_its_cards_share_once(account, monkeypatch):
    group = account.client("ec2").create_security_group(GroupName="nodes", Description="nodes")["GroupId"]
    asked: list[list[str]] = []
    ec2 = account.client("ec2")
    describe = ec2.describe_security_groups
    monkeypatch.setattr(ec2, "describe_security_groups", lambda **kwargs: asked.append(kwargs["GroupIds"]) or describe(**kwargs))

    run_program(efa_template(group, cards=32), account)

    assert asked == [[group]]
    assert len(account.client("ec2").describe_launch_templates()["LaunchTemplates"]) == 1
