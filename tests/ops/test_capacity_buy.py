"""Buying a Capacity Block happens once, deliberately, outside `pulumi up` (`gpucloud capacity buy`);
the program never buys one, and runs the group in the bought block, timed by the block's own dates,
however often it runs."""

from __future__ import annotations

import datetime
import types

import boto3
import pytest
from botocore.stub import Stubber

from gpucloud.cli import main
from gpucloud.config import load_stack_file
from gpucloud.ops.capacity import CapacityError, buy, name_block_in_stack_file
from gpucloud.plan import plan_stack
from gpucloud.program import build
from gpucloud.testing import moto_account, run_program
from gpucloud.testing.facts import AccountFacts
from support import deploy

UTC = datetime.timezone.utc
OFFERING = "cb-0c1d2e3f4a5b60718"
BOUGHT = "cr-0123456789abcdef0"
START = datetime.datetime(2027, 3, 1, 11, 30, tzinfo=UTC)
END = datetime.datetime(2027, 3, 5, 11, 30, tzinfo=UTC)

STACK_FILE = """\
# A training group on a Capacity Block still to buy.
config:
  aws:region: us-east-1
  gpu-cloud:project: demo
  gpu-cloud:owner: ml-team@example.com
  gpu-cloud:costCenter: cc-42
  gpu-cloud:budget:
    monthlyUsd: 20000
  gpu-cloud:account:
    createServiceLinkedRole: true
  gpu-cloud:groups:
    - name: pretrain   # trains on the block
      instanceTypes: [p5.48xlarge]
      minSize: 2
      maxSize: 2
      spotPercent: 0
      capacity:
        capacityBlock:
          offering:
            instanceType: p5.48xlarge   # what the block holds
            count: 2
            durationHours: 96
            startAfter: 2027-02-20
            endBefore: 2027-03-10
      checkpoint:
        timeoutSeconds: 180   # the drain's limit
"""

OFFERING_FACTS = {"id": OFFERING, "instanceType": "p5.48xlarge", "instanceCount": 2, "zone": "us-east-1b",
                  "start": START, "end": END, "durationHours": 96, "upfrontUsd": 7000.0}


@pytest.fixture
def stack_file(tmp_path):
    path = tmp_path / "Pulumi.train.yaml"
    path.write_text(STACK_FILE, encoding="utf-8")
    return path


def stubbed_ec2(*, purchase: bool) -> tuple[object, Stubber, list[dict]]:
    """An EC2 client answering as AWS would for the stack's offering; it records each purchase and
    refuses any call it was not told to expect."""
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    stubber = Stubber(ec2)
    stubber.add_response("describe_capacity_reservations", {"CapacityReservations": []})
    stubber.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [{
        "CapacityBlockOfferingId": OFFERING, "InstanceType": "p5.48xlarge", "AvailabilityZone": "us-east-1b",
        "InstanceCount": 2, "StartDate": START, "EndDate": END, "CapacityBlockDurationHours": 96,
        "UpfrontFee": "7000.00", "CurrencyCode": "USD"}]})
    purchases: list[dict] = []
    if purchase:
        stubber.add_response("purchase_capacity_block", {"CapacityReservation": {
            "CapacityReservationId": BOUGHT, "InstanceType": "p5.48xlarge", "AvailabilityZone": "us-east-1b",
            "TotalInstanceCount": 2, "State": "payment-pending", "ReservationType": "capacity-block",
            "StartDate": START, "EndDate": END}})
    ec2.meta.events.register("before-parameter-build.ec2.PurchaseCapacityBlock",
                             lambda params, **_: purchases.append(params))
    stubber.activate()
    return ec2, stubber, purchases


@pytest.mark.access_calls("person:deployer", "capacityBuy")
def test_the_block_is_bought_once_by_the_command_and_never_by_the_program(stack_file, capsys):
    before = plan_stack(load_stack_file(stack_file), facts=AccountFacts.model_validate({"capacityBlockOfferings": [OFFERING_FACTS]}))
    [failure] = [finding.message for finding in before.findings if finding.rule == "program-error"]
    assert f"capacityBlock.offering: not bought yet: EC2 offers {OFFERING}" in failure and "7,000.00 USD upfront" in failure
    assert f"gpucloud capacity buy --config {stack_file} --group pretrain" in failure
    assert not [r for r in before.resources if "capacityBlockReservation" in r.type]
    [line] = [line for line in before.cost_estimate.lines if "capacity block" in line.resource]
    assert f"offering {OFFERING}, not bought yet" in line.resource and line.monthly.desired == 7000.0, "priced, not bought"

    ec2, stubber, purchases = stubbed_ec2(purchase=False)
    assert buy(load_stack_file(stack_file), stack_file, ec2, "pretrain", confirm=None) is None
    stubber.assert_no_pending_responses()
    assert stack_file.read_text() == STACK_FILE and purchases == []
    assert "2027-03-01 11:30 to 2027-03-05 11:30 UTC (96 h), 7,000.00 USD upfront" in capsys.readouterr().out

    ec2, stubber, purchases = stubbed_ec2(purchase=True)
    assert buy(load_stack_file(stack_file), stack_file, ec2, "pretrain", confirm=OFFERING) == BOUGHT
    stubber.assert_no_pending_responses()
    assert [(call["CapacityBlockOfferingId"], call["InstancePlatform"]) for call in purchases] == [(OFFERING, "Linux/UNIX")]
    assert f"+          reservationId: {BOUGHT}  # bought {OFFERING}" in capsys.readouterr().out
    edited = stack_file.read_text()
    assert "# trains on the block" in edited and "# the drain's limit" in edited and "offering:" not in edited

    # AWS holds the block now; the program runs twice (an update of the first run) and buys nothing.
    with moto_account("us-east-1") as account:
        [held] = AccountFacts.model_validate({"capacityReservations": [{
            "id": BOUGHT, "instanceType": "p5.48xlarge", "zone": "us-east-1b", "instanceCount": 2, "state": "scheduled",
            "reservationType": "capacity-block", "start": START, "end": END, "upfrontUsd": 7000.0}]}).capacity_reservations
        account.capacity_reservations[BOUGHT] = held.model_dump()
        settings = load_stack_file(stack_file)
        first = deploy(settings, account)
        second = run_program(lambda: build(settings), account, stack=settings.stack, previous=first)

        assert {resource.operation for resource in second.resources if resource.type.startswith("aws:")} == {"same"}
        assert not [r for r in first.resources + second.resources if "capacityBlockReservation" in r.type]
        assert [item["id"] for item in account.capacity_reservations.values()] == [BOUGHT]
        scheduled = account.client("autoscaling").describe_scheduled_actions()["ScheduledUpdateGroupActions"]
        actions = {"-".join(action["ScheduledActionName"].split("-")[-2:]): action["StartTime"] for action in scheduled}
        assert actions == {"block-start": START, "block-end": END - datetime.timedelta(minutes=45)}, "the block's own dates"

    silent = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    with Stubber(silent):  # any AWS call fails: nothing is queued
        assert buy(settings, stack_file, silent, "pretrain", confirm=OFFERING) == BOUGHT
    assert stack_file.read_text() == edited, "a second run of the command buys nothing and changes nothing"


def test_a_block_an_interrupted_run_bought_is_written_not_bought_again(stack_file, capsys):
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    with Stubber(ec2) as stubber:
        stubber.add_response("describe_capacity_reservations", {"CapacityReservations": [{
            "CapacityReservationId": BOUGHT, "ReservationType": "capacity-block", "State": "scheduled",
            "StartDate": START, "EndDate": END}]})

        assert buy(load_stack_file(stack_file), stack_file, ec2, "pretrain", confirm=OFFERING) == BOUGHT

    assert f"reservationId: {BOUGHT}" in stack_file.read_text()
    assert "not buying another" in capsys.readouterr().out


def test_a_flow_style_offering_is_replaced_and_a_missing_one_is_refused():
    text = "config:\n  gpu-cloud:groups:\n    - {name: serve, capacity: {capacityBlock: {offering: {instanceType: p5.48xlarge, count: 2}}}}\n"

    edited = name_block_in_stack_file(text, "serve", BOUGHT, "bought")

    assert edited == f"config:\n  gpu-cloud:groups:\n    - {{name: serve, capacity: {{capacityBlock: {{reservationId: {BOUGHT}}}}}}}\n"
    with pytest.raises(CapacityError, match="no groups\\[name=train\\]"):
        name_block_in_stack_file(text, "train", BOUGHT, "bought")


@pytest.mark.access_calls("person:deployer", "capacityBuy")
def test_the_offering_is_looked_for_in_the_zones_of_the_stack_s_own_subnets(stack_file, capsys):
    """A stack on its own subnets runs only in their zones: an earlier offering elsewhere is passed over."""
    stack_file.write_text(STACK_FILE.replace(
        "  gpu-cloud:groups:\n", "  gpu-cloud:network:\n    subnetIds: [subnet-0a1b2c3d4e5f60001]\n  gpu-cloud:groups:\n"))
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    offered = {"InstanceType": "p5.48xlarge", "InstanceCount": 2, "EndDate": END, "CapacityBlockDurationHours": 96,
               "UpfrontFee": "7000.00", "CurrencyCode": "USD"}
    with Stubber(ec2) as stubber:
        stubber.add_response("describe_capacity_reservations", {"CapacityReservations": []})
        stubber.add_response("describe_subnets", {"Subnets": [
            {"SubnetId": "subnet-0a1b2c3d4e5f60001", "AvailabilityZone": "us-east-1a"}]})
        stubber.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [
            {**offered, "CapacityBlockOfferingId": "cb-0aaaaaaaaaaaaaaa1", "AvailabilityZone": "us-east-1b",
             "StartDate": START - datetime.timedelta(days=1)},
            {**offered, "CapacityBlockOfferingId": OFFERING, "AvailabilityZone": "us-east-1a", "StartDate": START}]})

        assert buy(load_stack_file(stack_file), stack_file, ec2, "pretrain", confirm=None) is None

    assert f"offering {OFFERING}: 2 x p5.48xlarge in us-east-1a" in capsys.readouterr().out


def offered(**changes) -> dict:
    """The stack's offering as DescribeCapacityBlockOfferings gives it, with `changes`."""
    return {"CapacityBlockOfferingId": OFFERING, "InstanceType": "p5.48xlarge", "AvailabilityZone": "us-east-1b",
            "InstanceCount": 2, "StartDate": START, "EndDate": END, "CapacityBlockDurationHours": 96,
            "UpfrontFee": "7000.00", "CurrencyCode": "USD", **changes}


def test_an_expired_block_or_an_on_demand_reservation_of_the_group_is_no_bought_block(stack_file, capsys):
    """Only a Capacity Block that still takes instances stops a purchase: an expired one, or an
    ordinary capacity reservation of the group in an active state, does not."""
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    with Stubber(ec2) as stubber:
        stubber.add_response("describe_capacity_reservations", {"CapacityReservations": [
            {"CapacityReservationId": "cr-0aaaaaaaaaaaaaaa1", "ReservationType": "capacity-block", "State": "expired"},
            {"CapacityReservationId": "cr-0aaaaaaaaaaaaaaa2", "ReservationType": "default", "State": "active"}]})
        stubber.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [offered()]})

        assert buy(load_stack_file(stack_file), stack_file, ec2, "pretrain", confirm=None) is None

    out = capsys.readouterr().out
    assert "not buying another" not in out and f"--confirm {OFFERING}" in out


def test_the_price_is_in_us_dollars_where_ec2_names_no_currency(stack_file, capsys):
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    without_currency = offered()
    del without_currency["CurrencyCode"]
    with Stubber(ec2) as stubber:
        stubber.add_response("describe_capacity_reservations", {"CapacityReservations": []})
        stubber.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [without_currency]})

        buy(load_stack_file(stack_file), stack_file, ec2, "pretrain", confirm=None)

    assert "7,000.00 USD upfront" in capsys.readouterr().out


def test_a_confirmation_of_another_offering_buys_nothing_and_exits_2(stack_file, capsys, monkeypatch):
    """EC2's offers change between the look and the purchase: a --confirm of an offering it no
    longer proposes is refused like bad input, so a script does not take it for a purchase."""
    ec2, stubber, purchases = stubbed_ec2(purchase=False)
    monkeypatch.setattr(boto3, "Session", lambda region_name: types.SimpleNamespace(client=lambda service: ec2))

    assert main(["capacity", "buy", "--config", str(stack_file), "--group", "pretrain",
                 "--confirm", "cb-0ffffffffffffffff"]) == 2

    stubber.assert_no_pending_responses()
    assert purchases == [] and stack_file.read_text() == STACK_FILE
    error = capsys.readouterr().err
    assert "error: not bought: --confirm cb-0ffffffffffffffff is not the offering EC2 proposes now" in error
    assert f"run: gpucloud capacity buy --config {stack_file} --group pretrain --confirm {OFFERING}" in error


def test_the_bought_block_takes_the_offering_s_lines_and_the_printed_diff_shows_just_those(stack_file, capsys):
    ec2, _, _ = stubbed_ec2(purchase=True)

    buy(load_stack_file(stack_file), stack_file, ec2, "pretrain", confirm=OFFERING)

    note = f"bought {OFFERING}: 2 x p5.48xlarge in us-east-1b, 2027-03-01 11:30 to 2027-03-05 11:30 UTC (96 h), 7,000.00 USD upfront"
    offering_lines = STACK_FILE[STACK_FILE.index("          offering:"):STACK_FILE.index("      checkpoint:")]
    assert stack_file.read_text() == STACK_FILE.replace(offering_lines, f"          reservationId: {BOUGHT}  # {note}\n")
    changed = [line for line in capsys.readouterr().out.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == [f"-{line}" for line in offering_lines.splitlines()] + [f"+          reservationId: {BOUGHT}  # {note}"]


def test_of_two_blocks_bought_earlier_the_one_that_starts_first_is_written(stack_file):
    later = {"ReservationType": "capacity-block", "State": "scheduled", "StartDate": END, "EndDate": END + (END - START)}
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    with Stubber(ec2) as stubber:
        stubber.add_response("describe_capacity_reservations", {"CapacityReservations": [
            {**later, "CapacityReservationId": "cr-00000000000000001"},
            {"CapacityReservationId": BOUGHT, "ReservationType": "capacity-block", "State": "active",
             "StartDate": START, "EndDate": END}]})

        assert buy(load_stack_file(stack_file), stack_file, ec2, "pretrain", confirm=OFFERING) == BOUGHT

    assert f"reservationId: {BOUGHT}  # bought earlier" in stack_file.read_text()


def test_a_block_bought_for_a_stack_file_edited_meanwhile_is_named_for_the_user_to_write(stack_file):
    """The purchase is made; a stack file that no longer has the group's offering is left as it is,
    and the refusal names the bought block's id to write by hand."""
    settings = load_stack_file(stack_file)
    stack_file.write_text(STACK_FILE.replace("name: pretrain", "name: pretraining"))
    ec2, stubber, purchases = stubbed_ec2(purchase=True)

    with pytest.raises(CapacityError, match=f"put `reservationId: {BOUGHT}` in place of the offering of group pretrain in "):
        buy(settings, stack_file, ec2, "pretrain", confirm=OFFERING)

    assert len(purchases) == 1 and "offering:" in stack_file.read_text()


def test_a_stack_file_without_groups_is_refused_not_a_crash():
    with pytest.raises(CapacityError, match="no groups\\[name=serve\\]"):
        name_block_in_stack_file("config:\n  aws:region: us-east-1\n", "serve", BOUGHT, "bought")


def test_an_offering_another_group_shares_through_a_yaml_anchor_is_not_edited():
    """Writing the bought block in place of a shared (anchored) offering would give the other group
    the block too: the edit is refused instead, and `_write` tells the user to name it by hand."""
    text = ("config:\n  gpu-cloud:groups:\n    - name: train\n      capacity: &block\n        capacityBlock:\n"
            "          offering: {instanceType: p5.48xlarge, count: 2}\n    - name: serve\n      capacity: *block\n")

    with pytest.raises(CapacityError, match="shared with another part of the stack file"):
        name_block_in_stack_file(text, "serve", BOUGHT, "bought")
