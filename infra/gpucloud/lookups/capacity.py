"""Reserved GPU capacity a group may run on: On-Demand Capacity Reservations and Capacity Blocks
for ML, looked up through pulumi-aws data sources, and the rules a group's reference must meet.

ODCRs are read through Cloud Control (`AWS::EC2::CapacityReservation`: pulumi-aws has no ODCR
data source), Capacity Blocks through `aws.ec2.get_capacity_block_reservation` and offerings
through `aws.ec2.get_capacity_block_offering`. That data source gives an offering's id, zone and
price but not its dates (its `start_date_range`/`end_date_range` are the search window it was
given), so a group's schedules are only ever timed from a block the account holds; buying one is
`gpucloud capacity buy`, outside the program.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass

import pulumi_aws as aws

from gpucloud.config import CapacityBlockOffer, GroupConfig
from gpucloud.lookups.facts import LookupUnavailable

USABLE_STATES = ("active", "scheduled", "payment-pending")
"""States in which a reservation takes (or will take) instances (EC2 API reference,
CapacityReservation `State`, read 2026-11-25); expired, cancelled and failed ones never will."""
LINUX_PLATFORMS = ("Linux/UNIX",)
"""The platform of the default AMI and of any Linux image without a paid OS (an Ubuntu image is Linux/UNIX)."""
BLOCK_TERMINATION_LEAD = datetime.timedelta(minutes=30)
"""EC2 starts terminating a Capacity Block's instances 30 minutes before it ends (its
EventBridge warning, 40 minutes before the end, says they "will begin to terminate in 10
minutes": EC2 user guide, "Monitor Capacity Blocks using EventBridge", read 2026-11-25)."""
BLOCK_SCALE_IN_LEAD = datetime.timedelta(minutes=45)
"""How long before a Capacity Block ends its group scales to zero: EC2 starts terminating the
block's instances BLOCK_TERMINATION_LEAD before the end, and each node may take the terminate
hook's 10 minutes to drain, plus 5 minutes for Auto Scaling to act on the schedule."""
SCHEDULE_LEAD = datetime.timedelta(minutes=15)
"""How far ahead a one-time scheduled action must fire when the program declares it: Auto Scaling
refuses a start time in the past ("ValidationError: Given start time is in the past", quoted in
hashicorp/terraform-provider-aws pull request 3033), and `pulumi up` reaches the call some minutes
after the program ran. An action due sooner is not declared (one that ran and that AWS deleted is
not declared again)."""


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


@dataclass(frozen=True)
class CapacityReservation:
    id: str
    instance_type: str
    availability_zone: str
    platform: str
    state: str
    instance_count: int
    reservation_type: str = "default"
    """`default` (an ODCR) or `capacity-block`."""
    start: datetime.datetime | None = None
    end: datetime.datetime | None = None


@dataclass(frozen=True)
class CapacityBlockOffering:
    """An offering as the data source gives it: its dates are not known here, only that it starts
    and ends within the search window (`window_start`, `window_end`)."""

    id: str
    instance_type: str
    instance_count: int
    availability_zone: str
    window_start: datetime.datetime
    window_end: datetime.datetime
    duration_hours: int
    upfront_usd: float
    currency: str = "USD"


def _timestamp(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _not_found(error: Exception) -> bool:
    text = str(error)
    return any(marker in text for marker in (
        "InvalidCapacityReservationId", "ResourceNotFoundException", "NotFound", "no matching", "no results",
    ))


def lookup_reservation(reservation_id: str) -> CapacityReservation | None:
    """An ODCR or a Capacity Block by id; None when the account has no such reservation."""
    try:
        found = aws.cloudcontrol.get_resource(type_name="AWS::EC2::CapacityReservation", identifier=reservation_id)
    except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
        if _not_found(error):
            return _lookup_block(reservation_id)
        raise LookupUnavailable(str(error)) from error
    properties = json.loads(found.properties)
    end = _timestamp(properties.get("EndDate"))
    expired = end is not None and end <= utc_now()
    return CapacityReservation(
        id=reservation_id,
        instance_type=properties.get("InstanceType", ""),
        availability_zone=properties.get("AvailabilityZone", ""),
        platform=properties.get("InstancePlatform", ""),
        state=properties.get("State") or ("expired" if expired else "active"),
        instance_count=int(properties.get("TotalInstanceCount") or properties.get("InstanceCount") or 0),
        reservation_type=properties.get("ReservationType", "default"),
        start=_timestamp(properties.get("StartDate")),
        end=end,
    )


def _lookup_block(reservation_id: str) -> CapacityReservation | None:
    try:
        found = aws.ec2.get_capacity_block_reservation(id=reservation_id)
    except Exception as error:  # noqa: BLE001
        if _not_found(error):
            return None
        raise LookupUnavailable(str(error)) from error
    return CapacityReservation(
        id=reservation_id,
        instance_type=found.instance_type,
        availability_zone=found.availability_zone,
        platform=found.instance_platform,
        state=found.state,
        instance_count=found.instance_count,
        reservation_type=found.reservation_type or "capacity-block",
        start=_timestamp(found.start_date),
        end=_timestamp(found.end_date),
    )


def lookup_offering(offer: CapacityBlockOffer) -> CapacityBlockOffering | None:
    """The Capacity Block offering EC2 proposes for the request; None when there is none."""
    start = datetime.datetime.combine(offer.start_after, datetime.time(), datetime.timezone.utc)
    end = datetime.datetime.combine(offer.end_before, datetime.time(), datetime.timezone.utc)
    try:
        found = aws.ec2.get_capacity_block_offering(
            instance_type=offer.instance_type, instance_count=offer.count,
            capacity_duration_hours=offer.duration_hours,
            start_date_range=start.strftime("%Y-%m-%dT%H:%M:%SZ"), end_date_range=end.strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
    except Exception as error:  # noqa: BLE001
        if _not_found(error):
            return None
        raise LookupUnavailable(str(error)) from error
    return CapacityBlockOffering(
        id=found.capacity_block_offering_id,
        instance_type=found.instance_type,
        instance_count=found.instance_count,
        availability_zone=found.availability_zone,
        window_start=start,
        window_end=end,
        duration_hours=found.capacity_duration_hours,
        upfront_usd=float(found.upfront_fee),
        currency=found.currency_code or "USD",
    )


def reservation_problem(reservation: CapacityReservation, group: GroupConfig, zones: set[str]) -> str | None:
    """Why the group cannot launch into this reservation, or None."""
    if reservation.state not in USABLE_STATES:
        return f"{reservation.id} is {reservation.state}: it takes no instances"
    if reservation.instance_type not in group.instance_types:
        return (f"{reservation.id} reserves {reservation.instance_type}, which the group does not list "
                f"({', '.join(group.instance_types)})")
    if reservation.platform not in LINUX_PLATFORMS:
        return f"{reservation.id} reserves the {reservation.platform} platform; the group's Linux image needs Linux/UNIX"
    if zones and reservation.availability_zone not in zones:
        return (f"{reservation.id} is in {reservation.availability_zone}, not in a zone of the group's subnets "
                f"({', '.join(sorted(zones))})")
    return None
