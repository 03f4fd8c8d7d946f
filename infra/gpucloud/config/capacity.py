"""Where a group's instances run: On-Demand Capacity Reservations or an EC2 Capacity Block for ML."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from gpucloud.config.allocation import AllocationConfig
from gpucloud.config.fields import ConfigModel, InstanceType, shaped

CapacityReservationId = Annotated[str, shaped(r"cr-[0-9a-f]{17}", "use a Capacity Reservation id such as cr-0123456789abcdef0", 20)]
ResourceGroupArn = Annotated[str, shaped(
    r"arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:[0-9]{12}:group/[A-Za-z0-9_.-]{1,128}",
    "use a resource group ARN such as arn:aws:resource-groups:us-east-1:123456789012:group/gpu-reservations", 300,
)]

CAPACITY_BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64)
"""Instances one Capacity Block can hold (DescribeCapacityBlockOfferings takes these counts; "each
Capacity Block can have up to 64 instances", EC2 user guide, "Find and purchase Capacity Blocks",
read 2026-11-25)."""


def capacity_block_hours_problem(hours: int) -> str | None:
    """Durations AWS sells: "1-day increments up to 14 days, and in 7-day increments up to 182 days"
    (EC2 user guide, "Find and purchase Capacity Blocks", read 2026-11-25)."""
    days, rest = divmod(hours, 24)
    if rest or days < 1 or days > 182 or (days > 14 and days % 7):
        return (f"{hours} hours is not a Capacity Block duration: whole days from 1 to 14 (24-336 hours), "
                "or whole weeks up to 182 days (504, 672, ... 4368 hours)")
    return None


class ReservationsConfig(ConfigModel):
    """On-Demand Capacity Reservations the group launches into, by id or by resource group."""

    ids: list[CapacityReservationId] = Field(default_factory=list, max_length=20)
    """On-Demand Capacity Reservation ids (`cr-...`) the group launches into, each once."""
    resource_group_arns: list[ResourceGroupArn] = Field(default_factory=list, max_length=5)
    """Resource groups of Capacity Reservations the group launches into; their members change without a stack
    update, so the plan does not check them."""
    preference: Literal["capacity-reservations-only", "capacity-reservations-first", "none"] = "capacity-reservations-first"
    """Auto Scaling's CapacityReservationPreference: only reserved capacity (launches fail once it is
    used up), reserved first then on-demand, or none (the group launches into no reservation, not
    even an open one its instances would match)."""

    @property
    def targets_reservations(self) -> bool:
        """Whether the group names a reservation target (never with preference none)."""
        return self.preference != "none"

    @model_validator(mode="after")
    def names_a_reservation(self) -> ReservationsConfig:
        """Auto Scaling's CapacityReservationSpecification: with preference `none` (or `open`) no
        CapacityReservationTarget may be given (botocore autoscaling model 2011-01-01, shape
        CapacityReservationSpecification); the other preferences need one."""
        if not self.targets_reservations:
            if self.ids or self.resource_group_arns:
                raise ValueError("preference none launches into no reservation, and Auto Scaling takes no reservation "
                                 "target with it: drop ids and resourceGroupArns, or use capacity-reservations-first")
            return self
        if not self.ids and not self.resource_group_arns:
            raise ValueError("lists no reservation: give ids or resourceGroupArns")
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("lists a reservation id twice")
        return self


class CapacityBlockOffer(ConfigModel):
    """A Capacity Block to buy. The program never buys one: the plan shows the matching offering's
    price and says "not bought yet", and `gpucloud capacity buy` buys it once, on confirmation, and
    puts the bought block's reservationId in its place in the stack file."""

    instance_type: InstanceType
    """The block's instance type: the group's one instanceTypes entry."""
    count: int
    """Instances in the block: 1, 2, 4, 8, 16, 32 or 64; the group's maxSize may not exceed it."""
    duration_hours: int
    """How long the block lasts, in hours: whole days from 1 to 14 (24-336), or whole weeks up to 182 days (504,
    672, ... 4368)."""
    start_after: datetime.date
    """The earliest date (UTC) the block may start."""
    end_before: datetime.date
    """The date (UTC) the block must end by; the window from startAfter must hold durationHours."""

    @model_validator(mode="before")
    @classmethod
    def purchase_is_a_command(cls, values: Any) -> Any:
        if isinstance(values, dict) and "purchase" in values:
            raise ValueError("purchase is no longer read: `pulumi up` never buys a Capacity Block (each run would "
                             "buy another). Drop it and run `gpucloud capacity buy --config <stack file> --group "
                             "<group>`, which buys the block once and writes its reservationId here")
        return values

    @field_validator("count")
    @classmethod
    def count_is_a_block_size(cls, count: int) -> int:
        if count not in CAPACITY_BLOCK_SIZES:
            raise ValueError(f"{count} instances is not a Capacity Block size: use one of {', '.join(map(str, CAPACITY_BLOCK_SIZES))}")
        return count

    @field_validator("duration_hours")
    @classmethod
    def duration_is_sold(cls, hours: int) -> int:
        problem = capacity_block_hours_problem(hours)
        if problem:
            raise ValueError(problem)
        return hours

    @model_validator(mode="after")
    def window_holds_the_block(self) -> CapacityBlockOffer:
        window_hours = (self.end_before - self.start_after).days * 24
        if window_hours < self.duration_hours:
            raise ValueError(f"startAfter {self.start_after} to endBefore {self.end_before} is shorter than "
                             f"durationHours {self.duration_hours}")
        return self


class CapacityBlockConfig(ConfigModel):
    """An EC2 Capacity Block for ML: one you hold (`reservationId`) or one to buy (`offering`)."""

    reservation_id: CapacityReservationId | None = None
    """A Capacity Block you hold, by its reservation id (`cr-...`); `gpucloud capacity buy` writes it here in place
    of offering."""
    offering: CapacityBlockOffer | None = None

    @model_validator(mode="after")
    def one_source(self) -> CapacityBlockConfig:
        if (self.reservation_id is None) == (self.offering is None):
            raise ValueError("give either reservationId (a block you hold) or offering (one to buy), not both or neither")
        return self


class CapacityConfig(ConfigModel):
    reservations: ReservationsConfig | None = None
    capacity_block: CapacityBlockConfig | None = None
    allocation: AllocationConfig | None = None
    """How Auto Scaling picks the group's spot and on-demand instances among its types and zones; unset: spot
    price-capacity-optimized, on-demand prioritized, capacity rebalancing on with spot."""

    @model_validator(mode="after")
    def one_kind(self) -> CapacityConfig:
        if self.reservations and self.capacity_block:
            raise ValueError("give reservations or capacityBlock, not both: a group runs in a Capacity Block alone")
        return self
