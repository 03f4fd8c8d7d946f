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
from gpucloud.lookups.facts import AwsLookups, LookupUnavailable
from gpucloud.lookups.problems import Problems

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


def scale_in_missed(end: datetime.datetime) -> bool:
    """Whether a block ending at `end` is too close to its end for the group's scale-to-zero
    action (BLOCK_SCALE_IN_LEAD before the end) to be declared SCHEDULE_LEAD ahead."""
    return end - BLOCK_SCALE_IN_LEAD <= utc_now() + SCHEDULE_LEAD


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
    and ends within the search window the stack file's offer gives."""

    id: str
    instance_type: str
    instance_count: int
    availability_zone: str
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


@dataclass(frozen=True)
class GroupCapacity:
    """The reservations and the Capacity Block (held, or offered and not bought) a group runs on."""

    reservations: tuple[CapacityReservation, ...] = ()
    block: CapacityReservation | None = None
    offering: CapacityBlockOffering | None = None

    @property
    def zone(self) -> str | None:
        """The zone a Capacity Block pins the group to, if it has one."""
        if self.block:
            return self.block.availability_zone
        return self.offering.availability_zone if self.offering else None


def group_capacity(group: GroupConfig, key: str, lookups: AwsLookups, problems: Problems) -> GroupCapacity:
    """The reservations and Capacity Block a group names, as EC2 describes them; each reference
    that EC2 would not launch into is a problem naming the reservation."""
    capacity = group.capacity
    reservations = []
    if capacity.reservations:
        for index, reservation_id in enumerate(capacity.reservations.ids):
            where = f"{key}.capacity.reservations.ids[{index}]"
            found = lookups.capacity_reservation(reservation_id)
            if found is None:
                problems.add(where, f"{reservation_id} does not exist in {problems.settings.region}")
            elif found.reservation_type == "capacity-block":
                problems.add(where, f"{reservation_id} is a Capacity Block: name it in capacity.capacityBlock.reservationId")
            else:
                problem = reservation_problem(found, group, set())
                if problem:
                    problems.add(where, problem)
                else:
                    reservations.append(found)
        if capacity.reservations.resource_group_arns:
            problems.warn(f"{key}.capacity.reservations.resourceGroupArns",
                          "the reservations in these resource groups are not checked here (their members change "
                          "without a stack update): each must match a listed type, Linux/UNIX and a zone of the group")
    block = capacity.capacity_block
    if block is None:
        return GroupCapacity(reservations=tuple(reservations))
    where = f"{key}.capacity.capacityBlock"
    if block.reservation_id:
        found = lookups.capacity_reservation(block.reservation_id)
        if found is None:
            problems.add(f"{where}.reservationId", f"{block.reservation_id} does not exist in {problems.settings.region}")
            return GroupCapacity()
        if found.reservation_type != "capacity-block":
            problems.add(f"{where}.reservationId", f"{block.reservation_id} is an On-Demand Capacity Reservation, not a "
                         "Capacity Block: name it in capacity.reservations.ids")
            return GroupCapacity()
        problem = reservation_problem(found, group, set())
        if problem is None and found.instance_count < group.max_size:
            problem = f"{block.reservation_id} holds {found.instance_count} instances, fewer than maxSize {group.max_size}"
        if problem is None and found.end and scale_in_missed(found.end):
            problem = (f"{block.reservation_id} ends {found.end:%Y-%m-%d %H:%M} UTC: the group's scale-in, "
                       f"{BLOCK_SCALE_IN_LEAD.seconds // 60} minutes before the end so that nodes drain before EC2 "
                       "reclaims them, has run or cannot be scheduled in time; drop capacity.capacityBlock or name "
                       "your next block")
        if problem:
            problems.add(f"{where}.reservationId", problem)
            return GroupCapacity()
        return GroupCapacity(block=found)
    offer = block.offering
    offering = lookups.capacity_block_offering(offer)
    if offering is None:
        problems.add(f"{where}.offering", f"EC2 offers no Capacity Block of {offer.count} x {offer.instance_type} for "
                     f"{offer.duration_hours} hours between {offer.start_after} and {offer.end_before}: widen the "
                     "window, or change the count or duration")
        return GroupCapacity()
    problems.failures.append(
        f"gpu-cloud:{where}.offering: not bought yet: EC2 offers {offering.id}, {offering.instance_count} x "
        f"{offering.instance_type} in {offering.availability_zone} for {offering.duration_hours} hours between "
        f"{offer.start_after} and {offer.end_before}, {offering.upfront_usd:,.2f} {offering.currency} upfront (not "
        f"refundable). The program never buys it: run `gpucloud capacity buy --config {problems.settings.source} "
        f"--group {group.name}` to see its dates, then with --confirm <offering id> to buy it once and put its "
        "reservationId here")
    return GroupCapacity(offering=offering)
