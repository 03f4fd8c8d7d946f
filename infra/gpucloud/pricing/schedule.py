"""How a group's scheduled actions move its capacity over a week.

Rule: one simulation per group, three readings of it.

- The week starts from the group's minSize, maxSize and desired (initial) capacity.
- When a scheduled action fires, the bounds it sets replace the current ones and, if it sets
  desiredCapacity, that value becomes the desired capacity.
- The three scenarios read the state in force at each moment: "min" is the lower bound (the
  schedule's minSize once one has set it, else the group's), "max" the upper bound, and
  "desired" the desired capacity clamped to the bounds, as Auto Scaling clamps it. So a group
  whose schedule allows 4 by day costs 4 instances by day at max, whatever desired says.
- A clamp is not remembered: when an action only changes bounds (say maxSize 0 at night, then
  maxSize 4 in the morning), the desired capacity returns to the last value that was set, i.e.
  the estimate assumes the group's scaling brings it back.

The week simulated is a fixed reference week, 2026-01-12 00:00 to 2026-01-19 00:00 UTC (no
daylight-saving change in the common zones), after a warm-up week from 2026-01-05 so that the
state at the start of the measured week reflects the actions of the week before. Cron times
are resolved in each schedule's time zone with `zoneinfo`, to the minute. Day-of-month and
month fields are evaluated on those dates, so a monthly schedule is only approximated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from gpucloud.config import GroupConfig, Schedule

from .catalog import PricingError

WARM_UP_START = datetime(2026, 1, 5, tzinfo=timezone.utc)
WEEK_START = datetime(2026, 1, 12, tzinfo=timezone.utc)
WEEK_END = WEEK_START + timedelta(days=7)
WEEK_SECONDS = (WEEK_END - WEEK_START).total_seconds()

_MONTH_NAMES = {name: number for number, name in enumerate(
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], start=1)}
_DAY_NAMES = {name: number for number, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}


@dataclass(frozen=True)
class Cron:
    """A parsed 5-field cron expression (minute hour day-of-month month day-of-week)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]  # 0 = Sunday
    day_of_month_restricted: bool
    day_of_week_restricted: bool

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days_of_month
        in_week = (day.isoweekday() % 7) in self.days_of_week
        # Standard cron: when both day fields are restricted, either one matching is enough.
        if self.day_of_month_restricted and self.day_of_week_restricted:
            return in_month or in_week
        return in_month and in_week


def _field(text: str, low: int, high: int, names: dict[str, int], what: str, expression: str) -> frozenset[int]:
    values: set[int] = set()
    for part in text.upper().split(","):
        match = re.fullmatch(r"(\*|\?|[0-9A-Z]+(?:-[0-9A-Z]+)?)(?:/([0-9]+))?", part)
        if not match:
            raise PricingError(f"cron {expression!r}: cannot read the {what} field {text!r} (L and # are not supported)")
        span, step = match.group(1), int(match.group(2) or 1)
        if step < 1:
            raise PricingError(f"cron {expression!r}: step 0 in the {what} field")

        def number(token: str) -> int:
            if token in names:
                return names[token]
            if not token.isdigit():
                raise PricingError(f"cron {expression!r}: {token!r} is not a valid {what}")
            return int(token)

        if span in ("*", "?"):
            start, end = low, high
        elif "-" in span:
            start, end = (number(token) for token in span.split("-"))
        else:
            start = number(span)
            end = high if match.group(2) else start
        if not (low <= start <= high and low <= end <= high) or start > end:
            raise PricingError(f"cron {expression!r}: {part!r} is outside {low}-{high} for the {what} field")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def parse_cron(expression: str) -> Cron:
    fields = expression.split()
    if len(fields) != 5:
        raise PricingError(f"cron {expression!r} does not have 5 fields")
    minute, hour, day_of_month, month, day_of_week = fields
    days_of_week = _field(day_of_week, 0, 7, _DAY_NAMES, "day-of-week", expression)
    days_of_week = frozenset(0 if day == 7 else day for day in days_of_week)
    return Cron(
        minutes=_field(minute, 0, 59, {}, "minute", expression),
        hours=_field(hour, 0, 23, {}, "hour", expression),
        days_of_month=_field(day_of_month, 1, 31, {}, "day-of-month", expression),
        months=_field(month, 1, 12, _MONTH_NAMES, "month", expression),
        days_of_week=days_of_week,
        day_of_month_restricted=day_of_month not in ("*", "?"),
        day_of_week_restricted=day_of_week not in ("*", "?"),
    )


def firing_times(schedule: Schedule, start: datetime, end: datetime) -> list[datetime]:
    """UTC times in [start, end) at which the schedule's recurrence fires, in its time zone."""
    cron = parse_cron(schedule.recurrence)
    zone = ZoneInfo(schedule.time_zone)
    times = []
    day = start.astimezone(zone).date() - timedelta(days=1)
    last_day = end.astimezone(zone).date() + timedelta(days=1)
    while day <= last_day:
        if cron.matches_day(day):
            for hour in sorted(cron.hours):
                for minute in sorted(cron.minutes):
                    moment = datetime.combine(day, time(hour, minute), tzinfo=zone).astimezone(timezone.utc)
                    if start <= moment < end:
                        times.append(moment)
        day += timedelta(days=1)
    return times


@dataclass(frozen=True)
class CapacityProfile:
    """Fraction of the week the group spends at each capacity."""

    fractions: dict[int, float]

    @property
    def average(self) -> float:
        return sum(capacity * fraction for capacity, fraction in self.fractions.items())


def capacity_profiles(group: GroupConfig) -> dict[str, CapacityProfile]:
    """Simulate the reference week once and read it for "min", "desired" and "max" (see the module docstring)."""
    schedules = group.scaling.schedules
    if not schedules:
        return {
            "min": CapacityProfile({group.min_size: 1.0}),
            "desired": CapacityProfile({group.initial_capacity: 1.0}),
            "max": CapacityProfile({group.max_size: 1.0}),
        }

    events: list[tuple[datetime, int, Schedule]] = []
    for order, schedule in enumerate(schedules):
        for moment in firing_times(schedule, WARM_UP_START, WEEK_END):
            events.append((moment, order, schedule))
    events.sort(key=lambda event: (event[0], event[1]))

    low, high, desired = group.min_size, group.max_size, group.initial_capacity
    fractions: dict[str, dict[int, float]] = {"min": {}, "desired": {}, "max": {}}
    cursor = WARM_UP_START

    def account(until: datetime) -> None:
        begin = max(cursor, WEEK_START)
        if until <= begin:
            return
        share = (until - begin).total_seconds() / WEEK_SECONDS
        running = {"min": min(low, high), "desired": min(max(desired, low), high), "max": high}
        for scenario, capacity in running.items():
            fractions[scenario][capacity] = fractions[scenario].get(capacity, 0.0) + share

    for moment, _order, schedule in events:
        account(moment)
        cursor = moment
        if schedule.min_size is not None:
            low = schedule.min_size
        if schedule.max_size is not None:
            high = schedule.max_size
        if schedule.desired_capacity is not None:
            desired = schedule.desired_capacity
    account(WEEK_END)
    return {scenario: CapacityProfile(shares) for scenario, shares in fractions.items()}


def approximated_schedules(group: GroupConfig) -> list[str]:
    """Names of schedules restricted by day-of-month or month, which one week only approximates."""
    names = []
    for schedule in group.scaling.schedules:
        _minute, _hour, day_of_month, month, _day_of_week = schedule.recurrence.split()
        if day_of_month not in ("*", "?") or month not in ("*", "?"):
            names.append(schedule.name)
    return names
