"""Capacity facts: what `gpucloud account snapshot` read about getting a group's instances, each
with the UTC time it was taken, so that the plan can say how old it is and ignore it once stale.

Spot placement scores (GetSpotPlacementScores, per region and per zone), recent spot prices
(DescribeSpotPriceHistory), the zones offering each type (DescribeInstanceTypeOfferings), the
active On-Demand Capacity Reservations of the group's types with instances free
(DescribeCapacityReservations) and Capacity Block offerings for the group's size
(DescribeCapacityBlockOfferings). The engine seeds none of them: only the plan's capacity line,
the capacity policy and the spot estimate read them.
"""

from __future__ import annotations

import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

SCORES_STALE_AFTER = datetime.timedelta(hours=24)
"""Spot placement scores, spot prices, free reservation counts and block offerings older than this
are treated as not known. A score describes the moment it was asked ("at the time of the Spot
placement score request", EC2 API reference, GetSpotPlacementScores, read 2026-11-28) and spot
prices, free reservations and offered blocks change within the day; one day matches the 24-hour
period EC2 counts new score configurations in (EC2 user guide, "Spot placement score",
Limitations, read 2026-11-28), so a daily snapshot stays within it."""
OFFERINGS_STALE_AFTER = datetime.timedelta(days=30)
"""Which zones offer a type changes rarely: zone offerings age like the other account facts."""


class _Facts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class SpotScoreFacts(_Facts):
    """The placement scores EC2 gave one group's spot request: its types, at its spot capacity."""

    group: str
    instance_types: list[str]
    """The types scored; empty for a group scored by its requirements."""
    instance_requirements: dict[str, Any] | None = None
    """The InstanceRequirementsWithMetadata scored in place of types, for a group of instanceRequirements."""
    target_capacity: int = Field(ge=1)
    """Spot instances at maxSize (TargetCapacityUnitType `units`: instances)."""
    taken_at: datetime.datetime
    region_score: int | None = Field(default=None, ge=1, le=10)
    """The region's score (all its zones, capacity-optimized); None: EC2 did not list the region."""
    zone_scores: dict[str, int] = Field(default_factory=dict)
    """Zone name -> score for one zone (SingleAvailabilityZone); EC2 lists the top ten."""
    not_scored: str | None = None
    """Why EC2 gave no score (its error code and message), where it refused the request."""


class SpotPriceFacts(_Facts):
    """The latest spot price of a type in a zone (Linux/UNIX), and since when it holds."""

    instance_type: str
    zone: str
    usd_per_hour: float = Field(ge=0)
    since: datetime.datetime
    taken_at: datetime.datetime


class ZoneOfferingFacts(_Facts):
    """The zones of the region that offer a type (DescribeInstanceTypeOfferings)."""

    instance_type: str
    zones: list[str]
    taken_at: datetime.datetime


class FreeReservationFacts(_Facts):
    """An active On-Demand Capacity Reservation of one of the groups' types with instances free."""

    id: str = Field(pattern=r"^cr-[0-9a-f]{17}$")
    instance_type: str
    zone: str
    platform: str
    available_count: int = Field(ge=0)
    match_criteria: Literal["open", "targeted"]
    """`open`: any matching launch uses it; `targeted`: only a group naming it (capacity.reservations.ids)."""
    taken_at: datetime.datetime


class BlockQuoteFacts(_Facts):
    """A Capacity Block EC2 offered for a group's size, as a price for the plan's fixes."""

    group: str
    instance_type: str
    instance_count: int
    zone: str
    start: datetime.datetime
    duration_hours: int
    upfront_usd: float
    taken_at: datetime.datetime


class CapacityFacts(_Facts):
    spot_scores: list[SpotScoreFacts] = Field(default_factory=list)
    spot_prices: list[SpotPriceFacts] = Field(default_factory=list)
    zone_offerings: list[ZoneOfferingFacts] = Field(default_factory=list)
    free_reservations: list[FreeReservationFacts] = Field(default_factory=list)
    block_quotes: list[BlockQuoteFacts] = Field(default_factory=list)

    def scores_of(self, group: str) -> SpotScoreFacts | None:
        return next((scores for scores in self.spot_scores if scores.group == group), None)

    def zones_offering(self, instance_type: str) -> set[str] | None:
        found = next((offer for offer in self.zone_offerings if offer.instance_type == instance_type), None)
        return set(found.zones) if found else None


def age(taken_at: datetime.datetime, now: datetime.datetime) -> datetime.timedelta:
    """How long ago a fact was taken (a time without a zone is UTC)."""
    if taken_at.tzinfo is None:
        taken_at = taken_at.replace(tzinfo=datetime.timezone.utc)
    return now - taken_at


def fresh(taken_at: datetime.datetime, now: datetime.datetime, limit: datetime.timedelta = SCORES_STALE_AFTER) -> bool:
    return age(taken_at, now) <= limit
