"""How a group grows and shrinks: target tracking, step scaling, schedules and GPU-idle rules."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from gpucloud.config.fields import (
    CRON_FIELD,
    ConfigModel,
    DimensionName,
    DimensionValue,
    MetricName,
    Namespace,
    ResourceName,
    Statistic,
    iana_time_zones,
    unique_names,
)
from gpucloud.limits import alarm_period_problem, alarm_window_problem


class TargetTracking(ConfigModel):
    """Keep a custom metric (e.g. queue backlog per instance) at a target value."""

    metric_name: MetricName
    namespace: Namespace
    target_value: float = Field(gt=0)
    statistic: Statistic = "Average"
    dimensions: dict[DimensionName, DimensionValue] = Field(default_factory=dict)
    disable_scale_in: bool = False


class StepScaling(ConfigModel):
    """Add `scaleOutBy` instances when a metric passes `threshold`."""

    metric_name: MetricName
    namespace: Namespace
    threshold: float
    scale_out_by: int = Field(ge=1, le=100)
    statistic: Statistic = "Average"
    dimensions: dict[DimensionName, DimensionValue] = Field(default_factory=dict)
    period_seconds: int = Field(default=60, ge=10, le=86400)
    evaluation_periods: int = Field(default=2, ge=1, le=100)
    cooldown_seconds: int = Field(default=300, ge=0, le=86400)

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

    name: ResourceName
    recurrence: str
    min_size: int | None = Field(default=None, ge=0)
    max_size: int | None = Field(default=None, ge=0)
    desired_capacity: int | None = Field(default=None, ge=0)
    time_zone: str = "UTC"

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
    minutes: int = Field(default=60, ge=5, le=1440)
    scale_in_by: int = Field(default=1, ge=1, le=100)


class IdleShutdown(ConfigModel):
    """Scale the group to zero once its GPUs have been idle this long (an idle fleet costs only its volumes)."""

    utilization_percent: float = Field(default=5, gt=0, le=100)
    minutes: int = Field(default=60, ge=10, le=1440)


class ScalingConfig(ConfigModel):
    target_tracking: TargetTracking | None = None
    step_scaling: list[StepScaling] = Field(default_factory=list)
    schedules: list[Schedule] = Field(default_factory=list)
    gpu_idle_scale_in: GpuIdleScaleIn | None = None

    @field_validator("schedules")
    @classmethod
    def schedule_names_are_unique(cls, schedules: list[Schedule]) -> list[Schedule]:
        return unique_names(schedules, "schedule")
