"""How a group grows and shrinks: target tracking, step scaling, schedules and GPU-idle rules."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import ConfigDict, Field, field_validator, model_validator

from gpucloud.config.fields import (
    CRON_FIELD,
    ConfigModel,
    DimensionName,
    DimensionValue,
    JsonShape,
    MetricName,
    Namespace,
    ResourceName,
    Statistic,
    iana_time_zones,
    json_pattern,
    unique_names,
)
from gpucloud.limits import alarm_period_problem, alarm_window_problem


class TargetTracking(ConfigModel):
    """Keep a custom metric (e.g. queue backlog per instance) at a target value."""

    metric_name: MetricName
    """The CloudWatch metric to hold at the target."""
    namespace: Namespace
    """The metric's CloudWatch namespace."""
    target_value: float = Field(gt=0)
    """The value Auto Scaling keeps the metric at, adding or removing instances."""
    statistic: Statistic = "Average"
    """How the metric's data points are aggregated: Average, Sum, Maximum, Minimum or SampleCount."""
    dimensions: dict[DimensionName, DimensionValue] = Field(default_factory=dict)
    """The metric's dimensions, name to value."""
    disable_scale_in: bool = False
    """True: the policy only adds instances; something else (a schedule, an idle rule) removes them."""


class StepScaling(ConfigModel):
    """Add `scaleOutBy` instances when a metric passes `threshold`."""

    metric_name: MetricName
    """The CloudWatch metric the alarm watches."""
    namespace: Namespace
    """The metric's CloudWatch namespace."""
    threshold: float
    """The alarm fires when the statistic is at or above this."""
    scale_out_by: int = Field(ge=1, le=100)
    """Instances added each time the alarm fires (never past the group's maxSize)."""
    statistic: Statistic = "Average"
    """How the alarm aggregates the metric over each period: Average, Sum, Maximum, Minimum or SampleCount."""
    dimensions: dict[DimensionName, DimensionValue] = Field(default_factory=dict)
    """The metric's dimensions, name to value."""
    period_seconds: int = Field(default=60, ge=10, le=86400)
    """The alarm's period: 10, 20, 30 or a multiple of 60 seconds, as CloudWatch takes."""
    evaluation_periods: int = Field(default=2, ge=1, le=100)
    """Periods in a row the threshold must be passed; periodSeconds x evaluationPeriods is at most a day
    (a week for periods of an hour or more), as CloudWatch takes."""
    cooldown_seconds: int = Field(default=300, ge=0, le=86400)
    """Seconds after a scale-out before the policy may act again."""

    @field_validator("period_seconds")
    @classmethod
    def period_is_one_cloudwatch_takes(cls, period_seconds: int) -> int:
        problem = alarm_period_problem(period_seconds)
        if problem:
            raise ValueError(problem)
        return period_seconds

    @model_validator(mode="after")
    def alarm_window_fits(self) -> StepScaling:
        problem = alarm_window_problem(self.period_seconds, self.evaluation_periods)
        if problem:
            raise ValueError(f"periodSeconds x evaluationPeriods: {problem}")
        return self


CRON_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")),
    ("day of week", 0, 7, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")),
)
"""The five fields of a recurrence, with the values each takes: Auto Scaling reads the Unix crontab
format (EC2 Auto Scaling API reference, PutScheduledUpdateGroupAction `Recurrence`: "[Minute] [Hour]
[Day_of_Month] [Month_of_Year] [Day_of_Week]", read 2026-11-25), whose ranges are crontab(5)'s."""


SCHEDULE_SIZES = ("minSize", "maxSize", "desiredCapacity")
"""The sizes a schedule sets, as the stack file spells them."""


def _any_case(word: str) -> str:
    return "".join(f"[{letter.upper()}{letter.lower()}]" for letter in word)


def cron_pattern() -> str:
    """What `recurrence_is_cron` takes, as one pattern for the JSON Schema: five fields of
    CRON_FIELD's characters, each number within its field's range and each name one its field
    takes, steps positive (or empty, as the check lets through). A range that runs backwards (5-1)
    still passes it."""
    fields = []
    for name, low, high, names in CRON_FIELDS:
        number = "0*(?:" + "|".join(str(value) for value in range(high, low - 1, -1)) + ")(?![0-9])"
        words = [*names, *(["L"] if name in ("day of month", "day of week") else [])]
        token = f"(?:{number}|(?:{'|'.join(map(_any_case, words))})(?![A-Za-z]))" if words else number
        part = rf"(?:[*?#\-]|{token})*(?:/(?:0*[1-9][0-9]*)?)?"
        fields.append(f"(?=[^ ]){part}(?:,{part})*")
    return " ".join(fields)


def cron_field_problem(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> str | None:
    """Why one cron field holds a value its position does not take (hour 25, month 13), or None."""
    for part in text.upper().split(","):
        span, _, step = part.partition("/")
        if step and not (step.isdigit() and int(step) >= 1):
            return f"the {name} field's step {step!r} is not a positive number"
        for token in re.findall(r"[0-9]+|[A-Z]+", span):
            if token in names or (token == "L" and name in ("day of month", "day of week")):
                continue
            if not token.isdigit():
                return f"{token!r} is not a {name}"
            if not low <= int(token) <= high:
                return f"{token} is outside {low}-{high}, the {name} field's range"
        bounds = re.fullmatch(r"([0-9]+)-([0-9]+)", span)
        if bounds and int(bounds[1]) > int(bounds[2]):
            return f"the {name} range {span} runs backwards"
    return None


class Schedule(ConfigModel):
    """A recurring resize, e.g. scale to zero at night."""

    model_config = ConfigDict(json_schema_extra={"anyOf": [{"required": [size]} for size in SCHEDULE_SIZES]})
    """`sets_some_size_consistently`'s first rule, in the JSON Schema: at least one size is set."""

    name: ResourceName
    """Unique within the group; part of the scheduled action's name."""
    recurrence: Annotated[str, JsonShape(pattern=json_pattern(cron_pattern()), maxLength=255, patternErrorMessage=(
        "expected 5 cron fields: minute 0-59, hour 0-23, day 1-31, month 1-12 or JAN-DEC, weekday 0-7 or SUN-SAT"))]
    """When it applies: 5-field crontab (minute 0-59, hour 0-23, day 1-31, month 1-12 or JAN-DEC,
    weekday 0-7 or SUN-SAT), e.g. "0 20 * * *"."""
    min_size: int | None = Field(default=None, ge=0)
    """The group's minSize from then on (at least one of the three sizes is set, none above the group's maxSize)."""
    max_size: int | None = Field(default=None, ge=0)
    """The group's maxSize from then on."""
    desired_capacity: int | None = Field(default=None, ge=0)
    """The group's desired capacity from then on (within minSize..maxSize)."""
    time_zone: Annotated[str, JsonShape(enum=sorted(iana_time_zones()),
                                        errorMessage="expected an IANA time zone such as Europe/Paris")] = "UTC"
    """The IANA time zone the recurrence is read in, e.g. Europe/London."""

    @field_validator("recurrence")
    @classmethod
    def recurrence_is_cron(cls, recurrence: str) -> str:
        fields = recurrence.split(" ")
        if len(fields) != 5 or not all(re.fullmatch(CRON_FIELD, field) for field in fields):
            raise ValueError(
                f"{recurrence!r} is not a 5-field cron expression (minute hour day month weekday)"
            )
        for field, (name, low, high, names) in zip(fields, CRON_FIELDS):
            problem = cron_field_problem(field, name, low, high, names)
            if problem:
                raise ValueError(f"{recurrence!r}: {problem}")
        if len(recurrence) > 255:
            raise ValueError(f"is {len(recurrence)} characters long; Auto Scaling takes a recurrence of at most 255")
        return recurrence

    @field_validator("time_zone")
    @classmethod
    def time_zone_is_known(cls, time_zone: str) -> str:
        if time_zone not in iana_time_zones():
            raise ValueError(f"{time_zone!r} is not an IANA time zone (e.g. Europe/Paris)")
        return time_zone

    @model_validator(mode="after")
    def sets_some_size_consistently(self) -> Schedule:
        if self.min_size is None and self.max_size is None and self.desired_capacity is None:
            raise ValueError("sets none of minSize, maxSize, desiredCapacity")
        low = self.min_size if self.min_size is not None else 0
        if self.max_size is not None and low > self.max_size:
            raise ValueError(f"minSize {low} is above maxSize {self.max_size}")
        if self.desired_capacity is not None:
            if self.desired_capacity < low or (
                self.max_size is not None and self.desired_capacity > self.max_size
            ):
                raise ValueError("desiredCapacity is outside minSize..maxSize")
        return self


class GpuIdleScaleIn(ConfigModel):
    """Remove instances while average GPU utilisation stays under `utilizationPercent`."""

    utilization_percent: float = Field(gt=0, le=100)
    """Average GPU utilisation of the group below which it scales in."""
    minutes: int = Field(default=60, ge=5, le=1440)
    """How long utilisation must stay below it."""
    scale_in_by: int = Field(default=1, ge=1, le=100)
    """Instances removed each time (never below the group's minSize)."""


class IdleShutdown(ConfigModel):
    """Scale the group to zero once its GPUs have been idle this long (an idle fleet costs only its volumes)."""

    utilization_percent: float = Field(default=5, gt=0, le=100)
    """Average GPU utilisation of the group below which it counts as idle."""
    minutes: int = Field(default=60, ge=10, le=1440)
    """How long it must stay idle before the group goes to zero; needs the group's minSize 0."""


class ScalingConfig(ConfigModel):
    """How the group's size follows its work; any combination of the four."""

    target_tracking: TargetTracking | None = None
    step_scaling: list[StepScaling] = Field(default_factory=list)
    """Step scale-out policies, each with its own alarm."""
    schedules: list[Schedule] = Field(default_factory=list)
    """Recurring resizes, e.g. up at 08:00 on weekdays and to zero at night."""
    gpu_idle_scale_in: GpuIdleScaleIn | None = None

    @field_validator("schedules")
    @classmethod
    def schedule_names_are_unique(cls, schedules: list[Schedule]) -> list[Schedule]:
        return unique_names(schedules, "schedule")

    def closed_for_good(self) -> list[int]:
        """The schedules (by index) that set maxSize 0 while no schedule of the group sets it above
        0 again. A scheduled action's sizes stay until something else changes them (Amazon EC2
        Auto Scaling user guide, "Scheduled scaling for Amazon EC2 Auto Scaling", read 2026-11-28),
        and no job, scale-out policy or desiredCapacity may go above maxSize, so after the first run
        the group stays empty; `pulumi up` does not see the drift without `--refresh`."""
        if any(schedule.max_size for schedule in self.schedules):
            return []
        return [index for index, schedule in enumerate(self.schedules) if schedule.max_size == 0]
