"""`gpucloud account snapshot` reads an account with read-only calls and writes facts that plan the
same as the account: against moto, with botocore stubs for the EC2 quotas moto lacks."""

from __future__ import annotations

import datetime

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from gpucloud.config import ConfigError, parse_stack_config
from gpucloud.plan import plan_stack
from gpucloud.plan.snapshot import dump_facts, snapshot_account
from gpucloud.testing.facts import load_facts
from support import minimal_config, private_subnets

QUOTA_CODES = ["L-417A185B", "L-DB2E81BA", "L-1216C47A", "L-7212CCBC", "L-3819A6DF", "L-34B43A08"]


@pytest.fixture
def credentials(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)


class QuotaStubbedSession:
    """The session (at `endpoint_url`, a moto server, when given), except that service-quotas
    answers from botocore stubs (moto has no EC2 quotas)."""

    def __init__(self, session: boto3.Session, values: dict[str, float], endpoint_url: str | None = None):
        self.session = session
        self.endpoint_url = endpoint_url
        self.quotas = session.client("service-quotas", region_name="us-east-1")
        self.stubber = Stubber(self.quotas)
        for code in QUOTA_CODES:
            if code in values:
                self.stubber.add_response("get_service_quota", {"Quota": {"QuotaCode": code, "Value": values[code]}},
                                          {"ServiceCode": "ec2", "QuotaCode": code})
            else:
                self.stubber.add_client_error("get_service_quota", "NoSuchResourceException",
                                              expected_params={"ServiceCode": "ec2", "QuotaCode": code})
        self.stubber.activate()

    def client(self, service, **kwargs):
        if service == "service-quotas":
            return self.quotas
        return self.session.client(service, **kwargs, **({"endpoint_url": self.endpoint_url} if self.endpoint_url else {}))


def test_the_snapshot_of_an_account_plans_like_the_account(credentials, tmp_path):
    with mock_aws():
        written, settings, subnets = take_snapshot(boto3.Session(region_name="us-east-1"), tmp_path)

    plan = plan_stack(settings, facts=written)
    assert not plan.failed
    [group] = [resource for resource in plan.resources if resource.type == "aws:autoscaling/group:Group"]
    assert sorted(group.inputs["vpcZoneIdentifiers"]) == sorted(subnets)
    assert any("(L-3819A6DF): groups workers need 8 vCPUs at maxSize, the account has 0" in finding.message
               for finding in plan.findings)


def test_the_snapshot_reads_a_moto_server_over_http_like_a_real_endpoint(credentials, tmp_path):
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        written, settings, subnets = take_snapshot(boto3.Session(region_name="us-east-1"), tmp_path,
                                                   endpoint_url=f"http://{host}:{port}")
    finally:
        server.stop()
    [vpc] = written.vpcs
    assert set(subnets) <= {subnet.id for subnet in vpc.subnets}
    assert written.quotas == {"L-DB2E81BA": 64.0, "L-3819A6DF": 0.0}


def take_snapshot(aws_session, tmp_path, endpoint_url=None):
    ec2 = aws_session.client("ec2", **({"endpoint_url": endpoint_url} if endpoint_url else {}))
    subnets = private_subnets(ec2, "10.70.0.0/16", "ab")
    public = private_subnets(ec2, "10.71.0.0/16", "a", egress="igw")
    aws_session.client("iam", **({"endpoint_url": endpoint_url} if endpoint_url else {})).create_service_linked_role(
        AWSServiceName="autoscaling.amazonaws.com")
    values = minimal_config(network={"subnetIds": subnets})
    del values["account"]
    settings = parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    session = QuotaStubbedSession(aws_session, {"L-DB2E81BA": 64.0, "L-3819A6DF": 0.0}, endpoint_url)

    facts = snapshot_account(settings, session, today=datetime.date(2026, 11, 24))

    session.stubber.assert_no_pending_responses()
    assert facts.quotas == {"L-DB2E81BA": 64.0, "L-3819A6DF": 0.0}
    assert facts.service_linked_roles == ["autoscaling.amazonaws.com"]
    [vpc] = facts.vpcs
    assert {subnet.id for subnet in vpc.subnets} >= set(subnets)
    assert public[0] not in {subnet.id for subnet in vpc.subnets}, "only the listed subnets' VPC is read"
    [main] = [table for table in vpc.route_tables if table.main]
    assert [route.target[:4] for route in main.routes if route.destination == "0.0.0.0/0"] == ["nat-"]
    path = tmp_path / "facts" / "demo.yaml"
    path.parent.mkdir()
    path.write_text(dump_facts(facts))
    written = load_facts(path)
    assert written == facts and written.snapshot.taken_on == datetime.date(2026, 11, 24)
    return written, settings, subnets


def test_the_snapshot_keeps_the_reservations_and_offerings_the_groups_name():
    """moto has no Capacity Reservations: EC2's answers are botocore stubs, shaped by its API model."""
    from gpucloud.plan.snapshot import _offerings, _reservations

    start = datetime.datetime(2027, 3, 1, 11, 30, tzinfo=datetime.timezone.utc)
    end = datetime.datetime(2027, 3, 5, 11, 30, tzinfo=datetime.timezone.utc)
    values = minimal_config(groups=[
        {"name": "serve", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "spotPercent": 0,
         "capacity": {"reservations": {"ids": ["cr-0a1b2c3d4e5f60718", "cr-0ffffffffffffffff"]}}},
        {"name": "pretrain", "instanceTypes": ["p5.48xlarge"], "minSize": 2, "maxSize": 2, "spotPercent": 0,
         "capacity": {"capacityBlock": {"offering": {"instanceType": "p5.48xlarge", "count": 2, "durationHours": 96,
                                                     "startAfter": "2027-02-20", "endBefore": "2027-03-10"}}}},
    ])
    settings = parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(ec2)
    stubber.add_response("describe_capacity_reservations", {"CapacityReservations": [{
        "CapacityReservationId": "cr-0a1b2c3d4e5f60718", "InstanceType": "g5.xlarge", "AvailabilityZone": "us-east-1a",
        "TotalInstanceCount": 2, "InstancePlatform": "Linux/UNIX", "State": "active", "ReservationType": "default",
    }]}, {"CapacityReservationIds": ["cr-0a1b2c3d4e5f60718"]})
    stubber.add_client_error("describe_capacity_reservations", "InvalidCapacityReservationId.NotFound",
                             expected_params={"CapacityReservationIds": ["cr-0ffffffffffffffff"]})
    stubber.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [{
        "CapacityBlockOfferingId": "cb-0c1d2e3f4a5b60718", "InstanceType": "p5.48xlarge", "InstanceCount": 2,
        "AvailabilityZone": "us-east-1b", "StartDate": start, "EndDate": end, "CapacityBlockDurationHours": 96,
        "UpfrontFee": "7000.00", "CurrencyCode": "USD",
    }]})

    with stubber:
        reservations, offerings = _reservations(ec2, settings), _offerings(ec2, settings)

    facts = load_facts_from({"capacityReservations": reservations, "capacityBlockOfferings": offerings})
    assert [item.id for item in facts.capacity_reservations] == ["cr-0a1b2c3d4e5f60718"], "a missing one stays missing"
    [offering] = facts.capacity_block_offerings
    assert (offering.zone, offering.upfront_usd, offering.start) == ("us-east-1b", 7000.0, start)


def load_facts_from(document):
    from gpucloud.testing.facts import AccountFacts

    return AccountFacts.model_validate(document)


def test_the_workspace_a_stack_names_is_kept_and_plans_under_its_own_id(credentials):
    def settings_naming(workspace_id):
        values = minimal_config(monitoring={"prometheus": {"enabled": True, "workspaceId": workspace_id}})
        return parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")

    with mock_aws():
        session = boto3.Session(region_name="us-east-1")
        workspace = session.client("amp").create_workspace(alias="shared")["workspaceId"]
        from gpucloud.plan.snapshot import _workspaces

        kept = _workspaces(session.client("amp"), settings_naming(workspace))
        missing = _workspaces(session.client("amp"), settings_naming("ws-00000000-0000-0000-0000-000000000000"))

    assert kept == [{"id": workspace, "alias": "shared", "status": "ACTIVE"}] and missing == []
    plan = plan_stack(settings_naming(workspace), facts=load_facts_from({"prometheusWorkspaces": kept}))
    assert not plan.failed
    assert not [resource for resource in plan.resources if resource.type == "aws:amp/workspace:Workspace"]
    [namespace] = [resource for resource in plan.resources if resource.type == "aws:amp/ruleGroupNamespace:RuleGroupNamespace"]
    assert namespace.inputs["workspaceId"] == workspace


def test_a_workspace_the_facts_hold_as_creating_stops_the_plan(credentials):
    values = minimal_config(monitoring={"prometheus": {"enabled": True, "workspaceId": "ws-0123abcd-0123-4567-89ab-0123456789ab"}})
    settings = parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    facts = load_facts_from({"prometheusWorkspaces": [{"id": "ws-0123abcd-0123-4567-89ab-0123456789ab", "status": "CREATING"}]})

    with pytest.raises(ConfigError) as error:
        plan_stack(settings, facts=facts)
    assert error.value.problems == [("gpu-cloud:monitoring.prometheus.workspaceId",
                                     "ws-0123abcd-0123-4567-89ab-0123456789ab is CREATING, not ACTIVE")]
