"""The capacity part of `gpucloud account snapshot`, on recorded EC2 answers: moto implements neither
GetSpotPlacementScores nor DescribeCapacityReservations nor DescribeCapacityBlockOfferings, so a
botocore Stubber answers, and checks each request and answer against EC2's API model (botocore's
ec2/2016-11-15/service-2.json; the spot price answer follows the API reference's example)."""

from __future__ import annotations

import datetime

import boto3
import pytest
from botocore.stub import Stubber

from gpucloud.config import parse_stack_config
from gpucloud.plan.capacity_snapshot import read_capacity
from gpucloud.testing.facts import AccountFacts
from support import minimal_config

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 28, 20, 0, tzinfo=UTC)
ZONES = [("use1-az6", "us-east-1a"), ("use1-az1", "us-east-1b"), ("use1-az2", "us-east-1c")]
TYPES = ["g5.xlarge", "g5.2xlarge", "g6.xlarge"]


def settings_of(*groups):
    values = minimal_config(groups=list(groups))
    return parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")


def ec2_stubbed():
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return ec2, Stubber(ec2)


def answer_zones(stubber):
    stubber.add_response("describe_availability_zones", {"AvailabilityZones": [
        {"ZoneName": name, "ZoneId": zone_id, "RegionName": "us-east-1", "State": "available"} for zone_id, name in ZONES]})


def answer_scores(stubber, types, capacity, region_score, zone_scores, asked=None):
    """The region's score, then the zones' (SingleAvailabilityZone), for the types or, given `asked`,
    for InstanceRequirementsWithMetadata."""
    what = {"InstanceRequirementsWithMetadata": asked} if asked is not None else {"InstanceTypes": types}
    request = {**what, "TargetCapacity": capacity, "TargetCapacityUnitType": "units", "RegionNames": ["us-east-1"]}
    stubber.add_response("get_spot_placement_scores", {"SpotPlacementScores": [
        {"Region": "us-east-1", "Score": region_score}]}, {**request, "SingleAvailabilityZone": False})
    stubber.add_response("get_spot_placement_scores", {"SpotPlacementScores": [
        {"Region": "us-east-1", "AvailabilityZoneId": zone_id, "Score": score} for zone_id, score in zone_scores.items()]},
        {**request, "SingleAvailabilityZone": True})


def answer_the_rest(stubber, types, reservations=(), block=None):
    stubber.add_response("describe_spot_price_history", {"SpotPriceHistory": [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.452100", "Timestamp": NOW - datetime.timedelta(hours=5)},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.471300", "Timestamp": NOW - datetime.timedelta(hours=1)},
        {"AvailabilityZone": "us-east-1b", "InstanceType": "g6.xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.390000", "Timestamp": NOW - datetime.timedelta(hours=2)},
    ]}, {"InstanceTypes": types, "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
         "StartTime": NOW - datetime.timedelta(hours=6), "EndTime": NOW})
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": [
        {"InstanceType": kind, "LocationType": "availability-zone", "Location": zone}
        for kind in types for zone in ("us-east-1a", "us-east-1b")]},
        {"LocationType": "availability-zone", "Filters": [{"Name": "instance-type", "Values": types}]})
    stubber.add_response("describe_capacity_reservations", {"CapacityReservations": list(reservations)},
                         {"Filters": [{"Name": "instance-type", "Values": types}, {"Name": "state", "Values": ["active"]}]})
    if block is not None:
        stubber.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": block}, {
            "InstanceType": "p5.48xlarge", "InstanceCount": 4, "CapacityDurationHours": 24,
            "StartDateRange": NOW, "EndDateRange": NOW + datetime.timedelta(days=14)})


def test_the_snapshot_records_scores_prices_offerings_and_free_reservations_with_their_time():
    settings = settings_of({"name": "batch", "instanceTypes": TYPES, "maxSize": 4, "onDemandBaseCapacity": 1})
    ec2, stubber = ec2_stubbed()
    answer_zones(stubber)
    answer_scores(stubber, TYPES, 3, 8, {"use1-az6": 9, "use1-az1": 3})
    answer_the_rest(stubber, sorted(TYPES), reservations=[
        {"CapacityReservationId": "cr-0a1b2c3d4e5f60718", "InstanceType": "g5.xlarge", "InstancePlatform": "Linux/UNIX",
         "AvailabilityZone": "us-east-1a", "AvailableInstanceCount": 2, "TotalInstanceCount": 4, "State": "active",
         "InstanceMatchCriteria": "open", "ReservationType": "default"},
        {"CapacityReservationId": "cr-0b1b2c3d4e5f60718", "InstanceType": "g5.xlarge", "InstancePlatform": "Windows",
         "AvailabilityZone": "us-east-1a", "AvailableInstanceCount": 2, "State": "active", "InstanceMatchCriteria": "open"},
        {"CapacityReservationId": "cr-0c1b2c3d4e5f60718", "InstanceType": "g6.xlarge", "InstancePlatform": "Linux/UNIX",
         "AvailabilityZone": "us-east-1b", "AvailableInstanceCount": 0, "State": "active", "InstanceMatchCriteria": "open"},
    ])

    with stubber:
        document = read_capacity(settings, ec2, NOW)
    stubber.assert_no_pending_responses()

    capacity = AccountFacts.model_validate({"capacity": document}).capacity
    [scores] = capacity.spot_scores
    assert (scores.group, scores.target_capacity, scores.region_score) == ("batch", 3, 8), "3 spot above a base of 1"
    assert scores.zone_scores == {"us-east-1a": 9, "us-east-1b": 3}, "zone ids are named as the stack names zones"
    assert scores.taken_at == NOW
    prices = {(price.instance_type, price.zone): price for price in capacity.spot_prices}
    assert prices[("g5.xlarge", "us-east-1a")].usd_per_hour == 0.4713, "the latest price of the window"
    assert prices[("g5.xlarge", "us-east-1a")].since == NOW - datetime.timedelta(hours=1)
    assert capacity.zones_offering("g6.xlarge") == {"us-east-1a", "us-east-1b"}
    assert [(item.id, item.available_count, item.match_criteria) for item in capacity.free_reservations] == [
        ("cr-0a1b2c3d4e5f60718", 2, "open")], "a Windows one and a full one take no instance of the group"


def test_a_refused_score_request_is_recorded_not_fatal():
    """An account past EC2's limit on new configurations, or a role without the action, still gets
    its other facts; the plan then says the group's capacity was not checked."""
    settings = settings_of({"name": "one", "instanceTypes": ["g5.xlarge"], "maxSize": 2})
    ec2, stubber = ec2_stubbed()
    answer_zones(stubber)
    stubber.add_client_error("get_spot_placement_scores", "UnauthorizedOperation",
                             "You are not authorized to perform this operation.")
    answer_the_rest(stubber, ["g5.xlarge"])

    with stubber:
        document = read_capacity(settings, ec2, NOW)

    [scores] = AccountFacts.model_validate({"capacity": document}).capacity.spot_scores
    assert scores.not_scored.startswith("UnauthorizedOperation: You are not authorized")
    assert scores.region_score is None and scores.zone_scores == {}


def test_groups_asking_the_same_configuration_share_one_answer_and_on_demand_groups_are_not_scored():
    """Each distinct request configuration counts against the account's 24-hour limit."""
    group = {"instanceTypes": TYPES, "maxSize": 2}
    settings = settings_of({"name": "aa", **group}, {"name": "bb", **group},
                           {"name": "steady", "instanceTypes": ["g5.xlarge"], "maxSize": 1, "spotPercent": 0})
    ec2, stubber = ec2_stubbed()
    answer_zones(stubber)
    answer_scores(stubber, TYPES, 2, 6, {"use1-az2": 5})
    answer_the_rest(stubber, sorted(TYPES))

    with stubber:
        document = read_capacity(settings, ec2, NOW)
    stubber.assert_no_pending_responses()

    assert [(item["group"], item["regionScore"]) for item in document["spotScores"]] == [("aa", 6), ("bb", 6)]


def test_a_p_type_group_gets_the_price_of_a_one_day_block_of_its_size():
    """Blocks come in 1, 2, 4, ... 64 instances: a group of maxSize 3 is quoted the block of 4."""
    settings = settings_of({"name": "train", "instanceTypes": ["p5.48xlarge", "p5e.48xlarge", "p4d.24xlarge"],
                            "maxSize": 3, "spotPercent": 0})
    start = datetime.datetime(2026, 12, 2, 11, 30, tzinfo=UTC)
    ec2, stubber = ec2_stubbed()
    answer_zones(stubber)
    answer_the_rest(stubber, sorted(["p5.48xlarge", "p5e.48xlarge", "p4d.24xlarge"]), block=[
        {"CapacityBlockOfferingId": "cb-0c1d2e3f4a5b60718", "InstanceType": "p5.48xlarge", "AvailabilityZone": "us-east-1b",
         "InstanceCount": 4, "StartDate": start, "EndDate": start + datetime.timedelta(days=1),
         "CapacityBlockDurationHours": 24, "UpfrontFee": "3342.72", "CurrencyCode": "USD"}])

    with stubber:
        document = read_capacity(settings, ec2, NOW)
    stubber.assert_no_pending_responses()

    [quote] = AccountFacts.model_validate({"capacity": document}).capacity.block_quotes
    assert (quote.group, quote.instance_count, quote.zone, quote.upfront_usd, quote.start) == (
        "train", 4, "us-east-1b", 3342.72, start)
    assert document["spotScores"] == [], "an on-demand group is not scored"


L4_REQUIREMENTS = {"gpuCount": {"min": 1, "max": 1}, "totalGpuMemoryMiB": {"min": 22000}, "vcpus": {"max": 16},
                   "allowedInstanceTypes": ["g6.*"]}
L4_ASKED = {"InstanceRequirements": {
    "VCpuCount": {"Min": 0, "Max": 16}, "MemoryMiB": {"Min": 0}, "AcceleratorTypes": ["gpu"],
    "AcceleratorCount": {"Min": 1, "Max": 1}, "AcceleratorManufacturers": ["nvidia"],
    "AcceleratorTotalMemoryMiB": {"Min": 22000}, "AllowedInstanceTypes": ["g6.*"]}}


def answer_requirement_scores(stubber, asked, capacity, region_score, zone_scores):
    answer_scores(stubber, None, capacity, region_score, zone_scores, asked=asked)


def test_a_group_of_instance_requirements_is_scored_from_its_requirements():
    """GetSpotPlacementScores takes InstanceRequirementsWithMetadata in place of InstanceTypes (the
    Stubber holds the request to botocore's shape: VCpuCount and MemoryMiB with a Min, EC2's names);
    two groups asking the same share one answer; prices and offerings are read for listed types only."""
    settings = settings_of({"name": "l4", "instanceRequirements": L4_REQUIREMENTS, "maxSize": 4},
                           {"name": "l4b", "instanceRequirements": L4_REQUIREMENTS, "maxSize": 4})
    ec2, stubber = ec2_stubbed()
    answer_zones(stubber)
    answer_requirement_scores(stubber, L4_ASKED, 4, 7, {"use1-az6": 8, "use1-az1": 5})

    with stubber:
        document = read_capacity(settings, ec2, NOW)
    stubber.assert_no_pending_responses()

    first, second = AccountFacts.model_validate({"capacity": document}).capacity.spot_scores
    assert (first.group, first.instance_types, first.instance_requirements) == ("l4", [], L4_ASKED)
    assert (first.region_score, first.zone_scores) == (7, {"us-east-1a": 8, "us-east-1b": 5})
    assert (second.group, second.zone_scores) == ("l4b", first.zone_scores)
    assert set(document) == {"spotScores"}, "no listed type: no prices, offerings, reservations or blocks to read"


def test_a_refused_requirements_score_request_is_recorded_not_fatal():
    settings = settings_of({"name": "l4", "instanceRequirements": L4_REQUIREMENTS, "maxSize": 2},
                           {"name": "one", "instanceTypes": ["g5.xlarge"], "maxSize": 2})
    ec2, stubber = ec2_stubbed()
    answer_zones(stubber)
    stubber.add_client_error("get_spot_placement_scores", "MaxConfigLimitExceeded",
                             "You have exceeded your maximum allowed spot placement configurations.")
    answer_scores(stubber, ["g5.xlarge"], 2, 4, {"use1-az6": 4})
    answer_the_rest(stubber, ["g5.xlarge"])

    with stubber:
        document = read_capacity(settings, ec2, NOW)
    stubber.assert_no_pending_responses()

    refused, scored = AccountFacts.model_validate({"capacity": document}).capacity.spot_scores
    assert refused.not_scored.startswith("MaxConfigLimitExceeded: You have exceeded")
    assert refused.instance_requirements == L4_ASKED
    assert (scored.group, scored.region_score, scored.not_scored) == ("one", 4, None)


@pytest.mark.parametrize(("group", "asked"), [
    ({"name": "l4", "instanceRequirements": L4_REQUIREMENTS, "maxSize": 2}, L4_ASKED),
    ({"name": "l4", "instanceTypes": ["g6.xlarge", "g6.2xlarge", "g6.4xlarge"], "maxSize": 2}, None),
])
def test_the_snapshot_command_saves_a_refused_score_request_as_not_scored_and_warns(group, asked, monkeypatch, tmp_path,
                                                                                     capsys):
    """The whole command on moto, for a group of requirements and one of types. moto has neither
    Spot placement scores nor reservations: EC2's refusal, and an account without reservations,
    are answered for it before the call goes out."""
    from moto import mock_aws

    from gpucloud.cli import main
    from gpucloud.testing.facts import load_facts
    from test_account_snapshot import QuotaStubbedSession

    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    settings = settings_of(group)
    monkeypatch.setattr("gpucloud.cli.account.load_stack_file", lambda *args, **kwargs: settings)
    out = tmp_path / "demo.yaml"
    answers = {
        "GetSpotPlacementScores": (400, {"Error": {"Code": "MaxConfigLimitExceeded", "Message":
                                                   "You have exceeded your maximum allowed spot placement configurations."}}),
        "DescribeCapacityReservations": (200, {"CapacityReservations": []}),
    }

    def answered(model, **_kwargs):
        status, parsed = answers[model.name]
        return type("Http", (), {"status_code": status})(), parsed

    with mock_aws():
        session = QuotaStubbedSession(boto3.Session(region_name="us-east-1"), {"L-3819A6DF": 64.0})
        original = session.client

        def client(service, **kwargs):
            made = original(service, **kwargs)
            for operation in answers if service == "ec2" else ():
                made.meta.events.register(f"before-call.ec2.{operation}", answered)
            return made

        session.client = client
        monkeypatch.setattr(boto3, "Session", lambda *args, **kwargs: session)
        assert main(["account", "snapshot", "--stack", "demo", "--out", str(out)]) == 0

    stdout, stderr = capsys.readouterr()
    assert "spot scores of 1 group(s)" in stdout
    assert ("warning: EC2 gave group l4 no Spot placement score (MaxConfigLimitExceeded: You have exceeded your "
            "maximum allowed spot placement configurations.); the plan will report its capacity not checked") in stderr
    [scores] = load_facts(out).capacity.spot_scores
    assert scores.not_scored.startswith("MaxConfigLimitExceeded") and scores.instance_requirements == asked
