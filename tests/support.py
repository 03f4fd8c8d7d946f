"""Helpers the tests share: example stacks, a minimal valid config, deploying a stack on the engine."""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpucloud.config import ConfigError, StackSettings, parse_stack_config
from gpucloud.documents.jobs import job_document_content
from gpucloud.naming import job_document_name, job_log_group_name
from gpucloud.program import build
from gpucloud.testing import Deployment, moto_account, run_program
from paths import EXAMPLE_STACKS, ROOT, STACKS  # noqa: F401 - the tests import them from here

MINIMAL_CONFIG: dict[str, Any] = {
    "project": "demo",
    "owner": "ml-team@example.com",
    "costCenter": "cc-42",
    "budget": {"monthlyUsd": 5000},
    "account": {"createServiceLinkedRole": True},
    "data": {"bucket": "demo-data", "readPrefixes": ["datasets/"], "writePrefixes": ["runs/"]},
    "groups": [{"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2}],
}


def minimal_config(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(MINIMAL_CONFIG)
    config.update(changes)
    return config


@contextlib.contextmanager
def moto_over_http() -> Iterator[str]:
    """moto's server on 127.0.0.1, answering from this process's moto accounts; yields its URL.

    What `moto.server.ThreadedMotoServer` runs, but polled every 10 ms: that one serves with
    werkzeug's default poll of 0.5 s, so stopping it kept each test waiting half a second."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, DomainDispatcherApplication(create_backend_app), threaded=True,
                         request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


def settings_for(values: dict[str, Any], stack: str = "demo", region: str = "us-east-1") -> StackSettings:
    return parse_stack_config(values, stack=stack, source=f"stacks/Pulumi.{stack}.yaml", region=region)


def config_problems(values: dict[str, Any]) -> list:
    """The problems `settings_for` refuses `values` with, each reason on one line."""
    with pytest.raises(ConfigError) as error:
        settings_for(values)
    assert all("\n" not in reason for _, reason in error.value.problems)
    return error.value.problems


def deploy(settings: StackSettings, account) -> Deployment:
    return run_program(lambda: build(settings), account, stack=settings.stack)


_EXAMPLE_PLANS: dict[tuple, Any] = {}


def plan_once(stack_file: Path, facts_file: Path | None = None):
    """The plan `gpucloud plan --config stack_file` makes (with the account facts in `facts_file`),
    planned once per test process and handed out as a deep copy (4 ms against 0.7 s a plan), so
    no test sees what another did to its copy. Several files plan the same example stacks; keyed by
    the files' paths and bytes, an edited stack is planned anew."""
    from gpucloud.config import load_stack_file
    from gpucloud.plan import plan_stack
    from gpucloud.testing.facts import load_facts

    key = (str(stack_file), stack_file.read_bytes(), str(facts_file), facts_file.read_bytes() if facts_file else None)
    if key not in _EXAMPLE_PLANS:
        _EXAMPLE_PLANS[key] = plan_stack(load_stack_file(stack_file), facts=load_facts(facts_file) if facts_file else None)
    return copy.deepcopy(_EXAMPLE_PLANS[key])


@contextlib.contextmanager
def deployed_alone(settings: StackSettings) -> Iterator[Deployment]:
    """`settings` deployed on a fresh account of its own, open until the block ends: what a module
    or class fixture gives tests that only read the deployment. It closes when the fixture's scope
    does, before any later test opens its own account."""
    with moto_account(settings.region) as account:
        yield deploy(settings, account)




class ExampleStack:
    """A deployed example stack: its settings beside the deployment's resources and account."""

    def __init__(self, settings: StackSettings, deployment: Deployment):
        self.settings = settings
        self.deployment = deployment

    def __getattr__(self, name: str) -> Any:
        return getattr(self.deployment, name)


def assert_cents(actual, expected):
    assert round(actual, 2) == round(expected, 2), f"{actual!r} != {expected!r} to the cent"


def private_subnets(ec2, cidr: str, zones: str, egress: str = "nat") -> list[str]:
    """A VPC of your own with a subnet (/24) per zone letter; `egress` decides their way out: `nat`
    (the VPC's main table routes 0.0.0.0/0 to a NAT gateway in a public subnet), `igw` (straight to
    an internet gateway: public subnets, useless to nodes without public IPs) or `none`."""
    vpc = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    prefix = cidr.rsplit(".", 2)[0]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"{prefix}.{index}.0/24", AvailabilityZone=f"us-east-1{zone}")["Subnet"]["SubnetId"]
        for index, zone in enumerate(zones)
    ]
    [main] = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "association.main", "Values": ["true"]}])["RouteTables"]
    if egress == "none":
        return subnets
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
    if egress == "igw":
        ec2.create_route(RouteTableId=main["RouteTableId"], DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
        return subnets
    public = ec2.create_subnet(VpcId=vpc, CidrBlock=f"{prefix}.250.0/24", AvailabilityZone=f"us-east-1{zones[0]}")["Subnet"]["SubnetId"]
    public_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_table, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
    ec2.associate_route_table(RouteTableId=public_table, SubnetId=public)
    address = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public, AllocationId=address)["NatGateway"]["NatGatewayId"]
    ec2.create_route(RouteTableId=main["RouteTableId"], DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    return subnets


def job_resources(session, settings: StackSettings, group: str, bucket: str) -> None:
    """What a deployed stack gives the job commands: `group` (one node wanted, up to four p5s in a
    VPC of its own), the data `bucket`, the job log group and the job document."""
    ec2 = session.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.20.0.0/24", AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ec2.create_launch_template(LaunchTemplateName="trainers", LaunchTemplateData={"ImageId": image, "InstanceType": "p5.48xlarge"})
    session.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName=group, MinSize=0, MaxSize=4, DesiredCapacity=1, VPCZoneIdentifier=subnet,
        LaunchTemplate={"LaunchTemplateName": "trainers", "Version": "$Latest"})
    session.client("s3").create_bucket(Bucket=bucket)
    session.client("logs").create_log_group(logGroupName=job_log_group_name(settings.name_base))
    session.client("ssm").create_document(Name=job_document_name(settings.name_base), Content=job_document_content(),
                                          DocumentType="Command", DocumentFormat="JSON")


def user_data_documents(source) -> list[dict]:
    """The cloud-config of every launch template in the account (a deployment, an example stack
    or an account: anything with `client`), as its latest version carries it."""
    import base64
    import gzip

    import yaml

    ec2 = source.client("ec2")
    documents = []
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        [version] = ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"], Versions=["$Latest"]
        )["LaunchTemplateVersions"]
        documents.append(yaml.safe_load(gzip.decompress(base64.b64decode(version["LaunchTemplateData"]["UserData"]))))
    assert documents, "the stack has launch templates"
    return documents


def node_configs(source) -> list[dict]:
    """node.json of every launch template, as its user data carries it."""
    import json

    from gpucloud.userdata.layout import NODE_CONFIG_PATH

    return [
        json.loads(entry["content"])
        for document in user_data_documents(source)
        for entry in document["write_files"]
        if entry["path"] == NODE_CONFIG_PATH
    ]
