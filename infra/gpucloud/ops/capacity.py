"""`gpucloud capacity buy`: buy a group's Capacity Block once, deliberately, outside `pulumi up`.

The program never buys a block: the provider's offering data source does not give the offering's
dates, and `capacityBlockOfferingId` forces replacement, so a purchase inside `pulumi up` would be
timed from the wrong dates and repeated by the next run. This command looks the offering up with
DescribeCapacityBlockOfferings (which gives its real StartDate and EndDate), shows it, buys it only
when given the offering's id to confirm (PurchaseCapacityBlock), and writes the bought block's
reservation id into the stack file in place of the offering, so every later run uses the block the
account holds and times the group's schedules from EC2's own dates.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpucloud.config import CapacityBlockOffer, StackSettings
from gpucloud.lookups.capacity import USABLE_STATES
from gpucloud.naming import GROUP_TAG, STACK_TAG

INSTANCE_PLATFORM = "Linux/UNIX"
"""The platform the group's images run (the plan refuses a block of another platform)."""


class CapacityError(Exception):
    """Nothing to buy, or the stack file cannot take the bought block; the message says what to do."""


@dataclass(frozen=True)
class Offering:
    """A Capacity Block offering as DescribeCapacityBlockOfferings describes it."""

    id: str
    instance_type: str
    instance_count: int
    zone: str
    start: datetime.datetime
    end: datetime.datetime
    duration_hours: int
    upfront_fee: str
    currency: str

    @classmethod
    def from_api(cls, item: dict[str, Any]) -> Offering:
        return cls(id=item["CapacityBlockOfferingId"], instance_type=item["InstanceType"],
                   instance_count=item["InstanceCount"], zone=item["AvailabilityZone"], start=item["StartDate"],
                   end=item["EndDate"], duration_hours=item["CapacityBlockDurationHours"],
                   upfront_fee=item["UpfrontFee"], currency=item.get("CurrencyCode") or "USD")

    def summary(self) -> str:
        return (f"{self.id}: {self.instance_count} x {self.instance_type} in {self.zone}, "
                f"{self.start:%Y-%m-%d %H:%M} to {self.end:%Y-%m-%d %H:%M} UTC ({self.duration_hours} h), "
                f"{float(self.upfront_fee):,.2f} {self.currency} upfront")


_NEVER = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)


def _utc(day: datetime.date) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time(), datetime.timezone.utc)


def find_offering(ec2, offer: CapacityBlockOffer, zones: set[str]) -> Offering | None:
    """The earliest offering (then the cheapest) matching the stack file's request, in one of
    `zones` when the stack lists its subnets (empty: any zone, the created network follows it)."""
    request = {"InstanceType": offer.instance_type, "InstanceCount": offer.count,
               "CapacityDurationHours": offer.duration_hours,
               "StartDateRange": _utc(offer.start_after), "EndDateRange": _utc(offer.end_before)}
    found: list[Offering] = []
    while True:
        page = ec2.describe_capacity_block_offerings(**request)
        found += [Offering.from_api(item) for item in page.get("CapacityBlockOfferings", [])]
        if not page.get("NextToken"):
            break
        request["NextToken"] = page["NextToken"]
    usable = [item for item in found if not zones or item.zone in zones]
    return min(usable, key=lambda item: (item.start, float(item.upfront_fee)), default=None)


def held_blocks(ec2, settings: StackSettings, group: str) -> list[dict[str, Any]]:
    """Capacity Blocks this stack's group already bought that still take instances, the one that
    starts first first (the group runs in it next), whatever order EC2 lists them in."""
    filters = [{"Name": f"tag:{key}", "Values": [value]}
               for key, value in ((STACK_TAG, settings.name_base), (GROUP_TAG, group))]
    reservations = ec2.describe_capacity_reservations(Filters=filters)["CapacityReservations"]
    usable = [item for item in reservations
              if item.get("ReservationType") == "capacity-block" and item.get("State") in USABLE_STATES]
    return sorted(usable, key=lambda item: (item.get("StartDate") or _NEVER, item["CapacityReservationId"]))


def _scalar(node: yaml.Node | None) -> Any:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _child(node: yaml.Node | None, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next(((name, value) for name, value in node.value if _scalar(name) == key), None)


def _last_end(node: yaml.Node) -> int:
    """Where the text of a value ends: its last scalar's end (a block mapping's own end mark
    reaches into the comments and blank lines after it), or a flow collection's closing bracket."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return node.end_mark.index
    children = [child for pair in node.value for child in (pair if isinstance(pair, tuple) else (pair,))]
    return _last_end(children[-1]) if children else node.end_mark.index


def name_block_in_stack_file(text: str, group: str, reservation_id: str, note: str) -> str:
    """The stack file's text with `group`'s `capacity.capacityBlock.offering` replaced by
    `reservationId: <id>  # <note>`; every other line, comments included, stays as it was."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    config = _child(root, "config")
    groups = _child(config[1] if config else None, "gpu-cloud:groups")
    items = groups[1].value if groups and isinstance(groups[1], yaml.SequenceNode) else []
    item = next((node for node in items if _scalar((_child(node, "name") or (None, None))[1]) == group), None)
    block = _child((_child(item, "capacity") or (None, None))[1], "capacityBlock")
    offering = _child(block[1] if block else None, "offering")
    if offering is None:
        raise CapacityError(f"the stack file has no groups[name={group}].capacity.capacityBlock.offering to replace")
    start, end = offering[0].start_mark.index, _last_end(offering[1])
    if getattr(block[1], "flow_style", False):
        replacement = f"reservationId: {reservation_id}"
    else:
        replacement = f"reservationId: {reservation_id}  # {note}"
    edited = text[:start] + replacement + text[end:]
    document = yaml.safe_load(edited)
    written = next(entry for entry in document["config"]["gpu-cloud:groups"] if entry.get("name") == group)
    if written.get("capacity", {}).get("capacityBlock") != {"reservationId": reservation_id}:
        raise CapacityError("the stack file could not be edited safely")
    if _others(document, group) != _others(yaml.safe_load(text), group):
        raise CapacityError(f"the offering of group {group} is shared with another part of the stack file "
                            "(a YAML anchor): editing it would change that part too")
    return edited


def _others(document: dict[str, Any], group: str) -> dict[str, Any]:
    """The stack file's settings other than `group`'s."""
    config = document["config"]
    return {**config, "gpu-cloud:groups": [entry for entry in config["gpu-cloud:groups"] if entry.get("name") != group]}


def _subnet_zones(ec2, settings: StackSettings) -> set[str]:
    subnet_ids = list(settings.config.network.subnet_ids or ())
    if not subnet_ids:
        return set()
    return {subnet["AvailabilityZone"] for subnet in ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"]}


def _write(path: Path, group: str, reservation_id: str, note: str, say: Callable[[str], None]) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        edited = name_block_in_stack_file(text, group, reservation_id, note)
    except CapacityError as error:
        raise CapacityError(f"{error}: put `reservationId: {reservation_id}` in place of the offering of group "
                            f"{group} in {path} yourself") from None
    path.write_text(edited, encoding="utf-8")
    say("".join(difflib.unified_diff(text.splitlines(keepends=True), edited.splitlines(keepends=True),
                                     fromfile=str(path), tofile=str(path))).rstrip("\n"))


def buy(settings: StackSettings, path: Path, ec2, group: str, confirm: str | None,
        say: Callable[[str], None] = print) -> str | None:
    """Show the group's offering; with `confirm` equal to its id, buy it and name the bought block
    in the stack file. Returns the reservation id the stack file now names, if any."""
    found = next((candidate for candidate in settings.config.groups if candidate.name == group), None)
    if found is None:
        raise CapacityError(f"stack {settings.stack!r} has no group {group!r}")
    block = found.capacity.capacity_block
    if block is None:
        raise CapacityError(f"group {group} has no capacity.capacityBlock to buy")
    if block.reservation_id:
        say(f"group {group} already runs in Capacity Block {block.reservation_id}: nothing to buy")
        return block.reservation_id
    held = held_blocks(ec2, settings, group)
    if held:
        reservation = held[0]
        say(f"group {group} already bought Capacity Block {reservation['CapacityReservationId']} "
            f"({reservation.get('StartDate')} to {reservation.get('EndDate')}); not buying another")
        if confirm:
            _write(path, group, reservation["CapacityReservationId"], "bought earlier; found by its tags", say)
        return reservation["CapacityReservationId"] if confirm else None
    offering = find_offering(ec2, block.offering, _subnet_zones(ec2, settings))
    if offering is None:
        raise CapacityError(f"EC2 offers no Capacity Block of {block.offering.count} x {block.offering.instance_type} "
                            f"for {block.offering.duration_hours} hours between {block.offering.start_after} and "
                            f"{block.offering.end_before} in a zone the stack can use: widen the window")
    say(f"offering {offering.summary()}")
    if confirm != offering.id:
        again = f"gpucloud capacity buy --config {path} --group {group} --confirm {offering.id}"
        if confirm:
            raise CapacityError(f"not bought: --confirm {confirm} is not the offering EC2 proposes now; to buy that "
                                f"one (shown above) run: {again}")
        say(f"not bought. A Capacity Block cannot be cancelled or refunded; to buy this one run: {again}")
        return None
    tags = [{"Key": key, "Value": value} for key, value in
            {**settings.tags, GROUP_TAG: group, "Name": f"{settings.name_base}-{group}"}.items()]
    bought = ec2.purchase_capacity_block(CapacityBlockOfferingId=offering.id, InstancePlatform=INSTANCE_PLATFORM,
                                         TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": tags}])
    reservation_id = bought["CapacityReservation"]["CapacityReservationId"]
    say(f"bought {offering.id} as Capacity Block {reservation_id}")
    _write(path, group, reservation_id, f"bought {offering.summary()}", say)
    return reservation_id
