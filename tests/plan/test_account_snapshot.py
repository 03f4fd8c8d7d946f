"""`gpucloud account snapshot` reads an account with read-only calls and writes facts that plan the
same as the account: against moto, with botocore stubs for the EC2 quotas moto lacks."""

from __future__ import annotations

import datetime

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from moto import mock_aws

from gpucloud.config import ConfigError, parse_stack_config
from gpucloud.plan import plan_stack
from gpucloud.plan.snapshot import dump_facts, snapshot_account
from gpucloud.testing.facts import load_facts
from support import minimal_config, moto_over_http, private_subnets

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
    with moto_over_http() as url:
        written, settings, subnets = take_snapshot(boto3.Session(region_name="us-east-1"), tmp_path, endpoint_url=url)
    [vpc] = written.vpcs
    assert set(subnets) <= {subnet.id for subnet in vpc.subnets}
    assert written.quotas == {"L-DB2E81BA": 64.0, "L-3819A6DF": 0.0}


def take_snapshot(aws_session, tmp_path, endpoint_url=None):
    ec2 = aws_session.client("ec2", **({"endpoint_url": endpoint_url} if endpoint_url else {}))
    subnets = private_subnets(ec2, "10.70.0.0/16", "ab")
    public = private_subnets(ec2, "10.71.0.0/16", "a", egress="igw")
    aws_session.client("iam", **({"endpoint_url": endpoint_url} if endpoint_url else {})).create_service_linked_role(
        AWSServiceName="autoscaling.amazonaws.com")
    aws_session.client("s3", **({"endpoint_url": endpoint_url} if endpoint_url else {})).create_bucket(Bucket="demo-data")
    values = minimal_config(network={"subnetIds": subnets})
    del values["account"]
    settings = parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    session = QuotaStubbedSession(aws_session, {"L-DB2E81BA": 64.0, "L-3819A6DF": 0.0}, endpoint_url)

    # moto has no Spot placement scores nor reservations: tests/plan/test_capacity_snapshot.py records them
    facts = snapshot_account(settings, session, today=datetime.date(2026, 11, 24), capacity=False)

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


WORKSPACE = "ws-0123abcd-0123-4567-89ab-0123456789ab"
ORG_ALERTS = "arn:aws:sns:us-east-1:123456789012:org-alerts"


def naming_the_workspace(**prometheus):
    values = minimal_config(monitoring={"prometheus": {"enabled": True, "workspaceId": WORKSPACE, **prometheus}})
    return parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")


def stubbed_amp(definition_topics: list[str] | None, namespaces: dict[str, str | None], found: bool = True):
    """An AMP client answering DescribeWorkspace, DescribeAlertManagerDefinition (one sending to
    `definition_topics`, or none) and ListRuleGroupsNamespaces (name -> its gpu-cloud:stack tag):
    moto has no alert manager definitions, so EC2-style botocore stubs shaped by AMP's model answer."""
    amp = boto3.client("amp", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(amp)
    if not found:
        stubber.add_client_error("describe_workspace", "ResourceNotFoundException", expected_params={"workspaceId": WORKSPACE})
        return amp, stubber
    when = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)
    stubber.add_response("describe_workspace", {"workspace": {
        "workspaceId": WORKSPACE, "alias": "shared", "arn": f"arn:aws:aps:us-east-1:123456789012:workspace/{WORKSPACE}",
        "status": {"statusCode": "ACTIVE"}, "createdAt": when}}, {"workspaceId": WORKSPACE})
    if definition_topics is None:
        stubber.add_client_error("describe_alert_manager_definition", "ResourceNotFoundException",
                                 expected_params={"workspaceId": WORKSPACE})
    else:
        config = yaml.safe_dump({"route": {"receiver": "sns"}, "receivers": [
            {"name": "sns", "sns_configs": [{"topic_arn": topic} for topic in definition_topics]}]})
        stubber.add_response("describe_alert_manager_definition", {"alertManagerDefinition": {
            "status": {"statusCode": "ACTIVE"}, "data": yaml.safe_dump({"alertmanager_config": config}).encode(),
            "createdAt": when, "modifiedAt": when}}, {"workspaceId": WORKSPACE})
    stubber.add_response("list_rule_groups_namespaces", {"ruleGroupsNamespaces": [
        {"arn": f"arn:aws:aps:us-east-1:123456789012:rulegroupsnamespace/{WORKSPACE}/{name}", "name": name,
         "status": {"statusCode": "ACTIVE"}, "createdAt": when, "modifiedAt": when,
         "tags": {"gpu-cloud:stack": stack} if stack else {}}
        for name, stack in namespaces.items()]}, {"workspaceId": WORKSPACE})
    return amp, stubber


def workspace_facts(definition_topics, namespaces, **prometheus):
    from gpucloud.plan.snapshot import _workspaces

    amp, stubber = stubbed_amp(definition_topics, namespaces)
    with stubber:
        found = _workspaces(amp, naming_the_workspace(**prometheus))
    stubber.assert_no_pending_responses()
    return found


def test_the_snapshot_records_what_the_workspace_holds_and_the_plan_refuses_what_amp_would(credentials):
    found = workspace_facts([ORG_ALERTS], {"gpu-cloud": "other-team", "org-rules": None})

    assert found == [{"id": WORKSPACE, "alias": "shared", "status": "ACTIVE", "alertManagerDefinition": True,
                      "alertManagerTopics": [ORG_ALERTS],
                      "ruleGroupsNamespaces": [{"name": "gpu-cloud", "stack": "other-team"}, {"name": "org-rules"}]}]
    with pytest.raises(ConfigError) as error:
        plan_stack(naming_the_workspace(), facts=load_facts_from({"prometheusWorkspaces": found}))
    problems = dict(error.value.problems)
    assert set(problems) == {"gpu-cloud:monitoring.prometheus.manageAlertManager", "gpu-cloud:monitoring.prometheus.workspaceId"}
    assert f"already has an alert manager definition (sending to {ORG_ALERTS})" in problems[
        "gpu-cloud:monitoring.prometheus.manageAlertManager"]
    assert "Set manageAlertManager: false" in problems["gpu-cloud:monitoring.prometheus.manageAlertManager"]
    assert "already has a rule groups namespace gpu-cloud (made by stack other-team)" in problems[
        "gpu-cloud:monitoring.prometheus.workspaceId"]


def test_a_missing_workspace_is_left_out_of_the_facts(credentials):
    from gpucloud.plan.snapshot import _workspaces

    amp, stubber = stubbed_amp(None, {}, found=False)
    with stubber:
        assert _workspaces(amp, naming_the_workspace()) == []


def test_with_manage_alert_manager_false_the_plan_leaves_the_workspaces_definition_alone(credentials):
    found = workspace_facts([ORG_ALERTS], {"org-rules": None}, manageAlertManager=False)
    plan = plan_stack(naming_the_workspace(manageAlertManager=False), facts=load_facts_from({"prometheusWorkspaces": found}))

    assert not plan.failed
    assert not [resource for resource in plan.resources if resource.type == "aws:amp/alertManagerDefinition:AlertManagerDefinition"]
    assert not [resource for resource in plan.resources if resource.type == "aws:amp/workspace:Workspace"]
    [namespace] = [resource for resource in plan.resources if resource.type == "aws:amp/ruleGroupNamespace:RuleGroupNamespace"]
    assert namespace.inputs["workspaceId"] == WORKSPACE


def test_the_stacks_own_definition_and_namespace_found_by_a_later_snapshot_are_its_own(credentials):
    from gpucloud.lookups.prometheus import workspace_conflicts

    own_topic = "arn:aws:sns:us-east-1:123456789012:gpu-cloud-demo-alerts"
    [workspace] = load_facts_from({"prometheusWorkspaces": workspace_facts([own_topic], {"gpu-cloud": "demo"})}).prometheus_workspaces
    assert workspace_conflicts(naming_the_workspace(), workspace.contents()) == ([], [])

    [workspace] = load_facts_from({"prometheusWorkspaces": workspace_facts(None, {"gpu-cloud": None})}).prometheus_workspaces
    [(key, reason)], _unchecked = workspace_conflicts(naming_the_workspace(), workspace.contents())
    assert key == "monitoring.prometheus.workspaceId" and "(not made by a gpu-cloud stack)" in reason


def test_facts_that_do_not_say_what_the_workspace_holds_plan_with_one_not_checked_line(credentials):
    facts = load_facts_from({"prometheusWorkspaces": [{"id": WORKSPACE, "status": "ACTIVE"}]})
    plan = plan_stack(naming_the_workspace(), facts=facts)

    assert not plan.failed
    [line] = [finding.message for finding in plan.findings if "alert manager definition" in finding.message]
    assert line.startswith("gpu-cloud:monitoring.prometheus.workspaceId: not checked")
    assert "gpucloud account snapshot" in line


def test_a_workspace_the_facts_hold_as_creating_stops_the_plan(credentials):
    facts = load_facts_from({"prometheusWorkspaces": [{"id": WORKSPACE, "status": "CREATING"}]})

    with pytest.raises(ConfigError) as error:
        plan_stack(naming_the_workspace(), facts=facts)
    assert error.value.problems == [("gpu-cloud:monitoring.prometheus.workspaceId",
                                     "ws-0123abcd-0123-4567-89ab-0123456789ab is CREATING, not ACTIVE")]


def test_quotas_service_quotas_does_not_answer_are_a_warning_not_a_silent_empty_map(credentials, tmp_path, monkeypatch,
                                                                                      capsys):
    from gpucloud.cli import main
    from support import settings_for

    settings = settings_for(minimal_config(), stack="demo")
    monkeypatch.setattr("gpucloud.cli.account.load_stack_file", lambda *args, **kwargs: settings)
    out = tmp_path / "demo.yaml"
    with mock_aws():
        session = QuotaStubbedSession(boto3.Session(region_name="us-east-1"), {"L-DB2E81BA": 64.0})
        monkeypatch.setattr(boto3, "Session", lambda *args, **kwargs: session)
        assert main(["account", "snapshot", "--stack", "demo", "--out", str(out), "--skip-capacity"]) == 0

    stdout, stderr = capsys.readouterr()
    assert "wrote" in stdout and ": 1 of 6 quotas" in stdout
    [warning] = stderr.splitlines()
    assert warning.startswith("warning: Service Quotas answered NoSuchResourceException for 5 EC2 vCPU quota(s) "
                              "in us-east-1: L-417A185B (Running On-Demand P instances), ")
    assert "not checked" in warning and "L-DB2E81BA" not in warning
    assert load_facts(out).quotas == {"L-DB2E81BA": 64.0}
