"""Reserved capacity on the engine: On-Demand Capacity Reservations, Capacity Blocks and their
offerings. moto implements none of them, so the engine answers from its own record, seeded from
the stack's account facts, and a purchased block joins that record. Nothing here is validated by
moto; every reference a group makes to a reservation is checked against the record."""

from __future__ import annotations

import datetime
import json
import secrets
from typing import Any

from gpucloud.testing.registry import Account, Created, ResourceRequest, invoke, refused, resource

CAPACITY_RESERVATION_TYPE = "AWS::EC2::CapacityReservation"


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def _reservation(account: Account, reservation_id: str, operation: str) -> dict[str, Any]:
    found = account.capacity_reservations.get(reservation_id)
    if found is None:
        raise refused(operation, "InvalidCapacityReservationId.NotFound",
                      f"The capacity reservation ID '{reservation_id}' does not exist (not in the account facts)")
    return found


@invoke("aws:cloudcontrol/getResource:getResource")
def cloud_control_resource(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """Cloud Control reads of `AWS::EC2::CapacityReservation` (how the lookups read an ODCR); other
    types are not kept by the engine and fail loudly."""
    if args.get("typeName") != CAPACITY_RESERVATION_TYPE:
        raise refused("GetResource", "UnsupportedActionException",
                      f"the engine answers Cloud Control reads of {CAPACITY_RESERVATION_TYPE} only, not {args.get('typeName')}")
    found = _reservation(account, args["identifier"], "GetResource")
    if found["reservation_type"] == "capacity-block":
        raise refused("GetResource", "ResourceNotFoundException",
                      f"{args['identifier']} is a Capacity Block, which Cloud Control does not read")
    properties = {
        "Id": found["id"], "InstanceType": found["instance_type"], "AvailabilityZone": found["zone"],
        "InstancePlatform": found["platform"], "InstanceCount": found["instance_count"],
        "TotalInstanceCount": found["instance_count"], "State": found["state"],
        "EndDate": _iso(found.get("end")), "StartDate": _iso(found.get("start")),
    }
    return {"id": found["id"], "identifier": found["id"], "typeName": CAPACITY_RESERVATION_TYPE,
            "properties": json.dumps({key: value for key, value in properties.items() if value is not None})}


@invoke("aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation")
def capacity_block(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    found = _reservation(account, args.get("id") or "", "DescribeCapacityReservations")
    if found["reservation_type"] != "capacity-block":
        raise refused("DescribeCapacityReservations", "InvalidCapacityReservationId.NotFound",
                      f"{found['id']} is not a Capacity Block")
    return {
        "id": found["id"], "availabilityZone": found["zone"], "instanceType": found["instance_type"],
        "instancePlatform": found["platform"], "state": found["state"], "instanceCount": found["instance_count"],
        "reservationType": "capacity-block", "startDate": _iso(found.get("start")), "endDate": _iso(found.get("end")),
    }


@invoke("aws:ec2/getCapacityBlockOffering:getCapacityBlockOffering")
def capacity_block_offering(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """The first offering in the facts matching type, count and duration whose dates fall in the
    requested window, as DescribeCapacityBlockOfferings answers (the data source takes one). Like
    the provider's data source, it gives back the window it was asked, not the offering's dates:
    its schema has no attribute for them (terraform-provider-aws
    internal/service/ec2/ec2_capacity_block_offering_data_source.go, read 2026-11-25)."""
    earliest = datetime.datetime.fromisoformat(args["startDateRange"].replace("Z", "+00:00"))
    latest = datetime.datetime.fromisoformat(args["endDateRange"].replace("Z", "+00:00"))
    for offering in account.capacity_block_offerings:
        if (offering["instance_type"], offering["instance_count"], offering["duration_hours"]) != (
            args["instanceType"], args["instanceCount"], args["capacityDurationHours"]
        ):
            continue
        if earliest <= offering["start"] and offering["end"] <= latest:
            return {
                "capacityBlockOfferingId": offering["id"], "availabilityZone": offering["zone"],
                "instanceType": offering["instance_type"], "instanceCount": offering["instance_count"],
                "capacityDurationHours": offering["duration_hours"], "upfrontFee": f"{offering['upfront_usd']:.2f}",
                "currencyCode": "USD", "startDateRange": args["startDateRange"], "endDateRange": args["endDateRange"],
                "tenancy": "default",
            }
    raise LookupError(f"no matching EC2 Capacity Block Offering found for {args['instanceCount']} x "
                      f"{args['instanceType']}, {args['capacityDurationHours']} hours")


@resource("aws:ec2/capacityBlockReservation:CapacityBlockReservation")
def buy_capacity_block(account: Account, request: ResourceRequest) -> Created:
    """Records the purchase; the block then answers lookups like one the account held."""
    offering_id = request.inputs["capacityBlockOfferingId"]
    offering = next((item for item in account.capacity_block_offerings if item["id"] == offering_id), None)
    if offering is None:
        raise refused("PurchaseCapacityBlock", "InvalidCapacityBlockOfferingId.NotFound",
                      f"The Capacity Block offering {offering_id} does not exist")
    reservation_id = "cr-" + secrets.token_hex(9)[:17]
    account.capacity_reservations[reservation_id] = {
        "id": reservation_id, "instance_type": offering["instance_type"], "zone": offering["zone"],
        "instance_count": offering["instance_count"], "platform": request.inputs.get("instancePlatform", "Linux/UNIX"),
        "state": "scheduled", "reservation_type": "capacity-block", "start": offering["start"], "end": offering["end"],
        "upfront_usd": offering["upfront_usd"], "resource_groups": [],
    }
    return Created(
        id=reservation_id,
        outputs={
            "arn": account.arn("ec2", f"capacity-reservation/{reservation_id}"),
            "availabilityZone": offering["zone"], "instanceType": offering["instance_type"],
            "instanceCount": offering["instance_count"], "reservationType": "capacity-block",
            "startDate": _iso(offering["start"]), "endDate": _iso(offering["end"]), "tenancy": "default",
            "upfrontFee": f"{offering['upfront_usd']:.2f}",
        },
        validated=False,
        note="moto has no Capacity Blocks: the purchase is recorded by the engine from the account facts' offering",
    )
