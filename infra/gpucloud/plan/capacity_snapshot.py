"""The capacity part of `gpucloud account snapshot`: for each group's types and zones, what the
account says about getting instances now. Each fact carries the UTC time it was read.

Read-only EC2 calls (IAM actions of the same names): ec2:GetSpotPlacementScores,
ec2:DescribeAvailabilityZones (scores name zones by id), ec2:DescribeSpotPriceHistory,
ec2:DescribeInstanceTypeOfferings, ec2:DescribeCapacityReservations and
ec2:DescribeCapacityBlockOfferings. A refused score request (a role without the action, or EC2's
limit on new request configurations) is recorded with its error, never fatal: the plan then says
the group's capacity was not checked.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from botocore.exceptions import ClientError

from gpucloud.config import GroupConfig, StackSettings
from gpucloud.config.capacity import CAPACITY_BLOCK_SIZES
from gpucloud.config.groups import purchase_split
from gpucloud.lookups.quotas import quota_family
from gpucloud.lookups.requirements import ec2_instance_requirements

PRICE_WINDOW = datetime.timedelta(hours=6)
"""How far back spot prices are read. DescribeSpotPriceHistory also returns the last change before
the window's start, the price in effect then (EC2 API reference, DescribeSpotPriceHistory, read
2026-11-28), so the latest entry per type and zone is today's price."""
LINUX_PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]
BLOCK_SEARCH = datetime.timedelta(days=14)
BLOCK_QUOTE_HOURS = 24
"""A one-day block, the shortest EC2 sells (durations in 1-day steps up to 14 days: EC2 API
reference, DescribeCapacityBlockOfferings `CapacityDurationHours`, read 2026-11-28), as a price
for the plan's fix."""


def spot_capacity(group: GroupConfig) -> int:
    """The spot instances the group runs at maxSize: the target capacity its scores are asked for,
    in instances (TargetCapacityUnitType `units`); at least 1, the API's minimum."""
    return max(1, purchase_split(group.max_size, group.on_demand_base_capacity, group.spot_percent)[1])


def read_capacity(settings: StackSettings, ec2, now: datetime.datetime) -> dict[str, Any]:
    """The capacity facts of every group: spot scores for its listed types or its instanceRequirements;
    prices, zone offerings, free reservations and block quotes for listed types only (the types a
    group's requirements match are only known once the plan resolves them)."""
    groups = list(settings.config.groups)
    types = sorted({name for group in groups for name in group.instance_types})
    stamp = now.isoformat()
    if not groups:
        return {}
    zone_names = {zone["ZoneId"]: zone["ZoneName"] for zone in ec2.describe_availability_zones()["AvailabilityZones"]}
    facts: dict[str, Any] = {
        "spotScores": _scores(ec2, [group for group in groups if group.uses_spot], settings.region, zone_names, stamp)}
    if types:
        facts |= {
            "spotPrices": _prices(ec2, types, now, stamp),
            "zoneOfferings": _offerings(ec2, types, stamp),
            "freeReservations": _free_reservations(ec2, types, stamp),
            "blockQuotes": _block_quotes(ec2, [group for group in groups if group.instance_types], now, stamp),
        }
    return facts


def score_selection(group: GroupConfig) -> dict[str, Any]:
    """What a score request asks of the group: its InstanceTypes, or, for a group of
    instanceRequirements, InstanceRequirementsWithMetadata (EC2 takes one or the other: API
    reference, GetSpotPlacementScores, read 2026-11-28)."""
    if group.instance_requirements is not None:
        return {"InstanceRequirementsWithMetadata": ec2_instance_requirements(group.instance_requirements)}
    return {"InstanceTypes": list(group.instance_types)}


def _scores(ec2, groups: list[GroupConfig], region: str, zone_names: dict[str, str], stamp: str) -> list[dict[str, Any]]:
    """One request configuration per distinct (types or requirements, capacity), per region and per
    zone: EC2 may refuse new configurations for 24 hours once an account asks for many (EC2 user
    guide, "Spot placement score", Limitations, read 2026-11-28), so groups that ask the same share
    the answer."""
    answers: dict[tuple[str, int], dict[str, Any]] = {}
    found = []
    for group in groups:
        selection = score_selection(group)
        key = (json.dumps(selection, sort_keys=True), spot_capacity(group))
        if key not in answers:
            answers[key] = _score(ec2, selection, key[1], region, zone_names)
        asked = selection.get("InstanceRequirementsWithMetadata")
        found.append({"group": group.name, "instanceTypes": list(selection.get("InstanceTypes", [])),
                      **({"instanceRequirements": asked} if asked else {}), "targetCapacity": key[1],
                      "takenAt": stamp, **answers[key]})
    return found


def _score(ec2, selection: dict[str, Any], capacity: int, region: str, zone_names: dict[str, str]) -> dict[str, Any]:
    """The region's score and each zone's. EC2 scores one to ten how likely the request is to
    succeed, ten highly likely (API reference, GetSpotPlacementScores, SpotPlacementScore `Score`);
    with one or two types the score is always low, and the user guide says three are required."""
    request = {**selection, "TargetCapacity": capacity, "TargetCapacityUnitType": "units", "RegionNames": [region]}
    try:
        regional = _paged(ec2, "get_spot_placement_scores", "SpotPlacementScores", SingleAvailabilityZone=False, **request)
        zonal = _paged(ec2, "get_spot_placement_scores", "SpotPlacementScores", SingleAvailabilityZone=True, **request)
    except ClientError as error:
        return {"notScored": f"{error.response['Error']['Code']}: {error.response['Error'].get('Message', '')}".strip()}
    region_score = next((item["Score"] for item in regional if item.get("Region") == region), None)
    zones = {zone_names.get(item["AvailabilityZoneId"], item["AvailabilityZoneId"]): item["Score"]
             for item in zonal if item.get("AvailabilityZoneId")}
    return {**({"regionScore": region_score} if region_score else {}), "zoneScores": dict(sorted(zones.items()))}


def _paged(ec2, operation: str, key: str, **request) -> list[dict[str, Any]]:
    return [item for page in ec2.get_paginator(operation).paginate(**request) for item in page[key]]


def _prices(ec2, types: list[str], now: datetime.datetime, stamp: str) -> list[dict[str, Any]]:
    """The latest Linux spot price of each type in each zone."""
    history = _paged(ec2, "describe_spot_price_history", "SpotPriceHistory", InstanceTypes=types,
                     ProductDescriptions=LINUX_PRODUCTS, StartTime=now - PRICE_WINDOW, EndTime=now)
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for item in history:
        key = (item["InstanceType"], item["AvailabilityZone"])
        if key not in latest or item["Timestamp"] > latest[key]["Timestamp"]:
            latest[key] = item
    return [{"instanceType": kind, "zone": zone, "usdPerHour": float(item["SpotPrice"]),
             "since": item["Timestamp"].isoformat(), "takenAt": stamp}
            for (kind, zone), item in sorted(latest.items())]


def _offerings(ec2, types: list[str], stamp: str) -> list[dict[str, Any]]:
    offered = _paged(ec2, "describe_instance_type_offerings", "InstanceTypeOfferings", LocationType="availability-zone",
                     Filters=[{"Name": "instance-type", "Values": types}])
    zones: dict[str, set[str]] = {kind: set() for kind in types}
    for item in offered:
        zones.setdefault(item["InstanceType"], set()).add(item["Location"])
    return [{"instanceType": kind, "zones": sorted(found), "takenAt": stamp} for kind, found in sorted(zones.items())]


def _free_reservations(ec2, types: list[str], stamp: str) -> list[dict[str, Any]]:
    """Active On-Demand Capacity Reservations of the types, Linux/UNIX, with instances free
    (AvailableInstanceCount); Capacity Blocks are left out (a group names its block)."""
    listed = _paged(ec2, "describe_capacity_reservations", "CapacityReservations",
                    Filters=[{"Name": "instance-type", "Values": types}, {"Name": "state", "Values": ["active"]}])
    return [
        {"id": item["CapacityReservationId"], "instanceType": item["InstanceType"], "zone": item["AvailabilityZone"],
         "platform": item["InstancePlatform"], "availableCount": item["AvailableInstanceCount"],
         "matchCriteria": item.get("InstanceMatchCriteria", "open"), "takenAt": stamp}
        for item in listed
        if item.get("ReservationType", "default") == "default" and item.get("InstancePlatform") == "Linux/UNIX"
        and item.get("AvailableInstanceCount", 0) > 0
    ]


def _block_quotes(ec2, groups: list[GroupConfig], now: datetime.datetime, stamp: str) -> list[dict[str, Any]]:
    """The earliest one-day Capacity Block in the next two weeks for each P-type group's first type,
    of the smallest block size that holds maxSize; a type EC2 sells no block of answers an error or
    nothing, and is left out."""
    quotes = []
    for group in groups:
        kind = group.instance_types[0]
        size = next((size for size in CAPACITY_BLOCK_SIZES if size >= group.max_size), None)
        if quota_family(kind) != "P" or size is None or group.capacity_block:
            continue
        try:
            offered = _paged(ec2, "describe_capacity_block_offerings", "CapacityBlockOfferings", InstanceType=kind,
                             InstanceCount=size, CapacityDurationHours=BLOCK_QUOTE_HOURS,
                             StartDateRange=now, EndDateRange=now + BLOCK_SEARCH)
        except ClientError:
            continue
        if offered:
            first = min(offered, key=lambda item: item["StartDate"])
            quotes.append({"group": group.name, "instanceType": first["InstanceType"],
                           "instanceCount": first["InstanceCount"], "zone": first["AvailabilityZone"],
                           "start": first["StartDate"].isoformat(), "durationHours": first["CapacityBlockDurationHours"],
                           "upfrontUsd": float(first["UpfrontFee"]), "takenAt": stamp})
    return quotes
