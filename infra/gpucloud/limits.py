"""Limits real AWS APIs enforce and moto does not, kept in one place so that config validation
refuses them before any resource exists and the engine refuses them as AWS would."""

from __future__ import annotations

ALARM_HIGH_RESOLUTION_PERIODS = (10, 20, 30)
ALARM_WINDOW_MAX_SECONDS = 7 * 86_400
ALARM_WINDOW_MAX_SECONDS_SHORT_PERIOD = 86_400
"""CloudWatch PutMetricAlarm, API reference, parameters `Period` and `EvaluationPeriods`
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html, read
2026-11-24): a period is 10, 20, 30 or any multiple of 60 seconds; period x evaluation periods is at
most 604,800 s (seven days), and at most 86,400 s (one day) when the period is under 3,600 s."""


def alarm_period_problem(period_seconds: int) -> str | None:
    """Why CloudWatch would refuse this alarm period, or None."""
    if period_seconds in ALARM_HIGH_RESOLUTION_PERIODS or (period_seconds > 0 and period_seconds % 60 == 0):
        return None
    return f"{period_seconds} s is not a period CloudWatch takes (10, 20, 30 or a multiple of 60)"


def alarm_window_problem(period_seconds: int, evaluation_periods: int) -> str | None:
    """Why CloudWatch would refuse an alarm with this period and number of periods, or None."""
    problem = alarm_period_problem(period_seconds)
    if problem:
        return problem
    window = period_seconds * evaluation_periods
    short = period_seconds < 3600
    limit = ALARM_WINDOW_MAX_SECONDS_SHORT_PERIOD if short else ALARM_WINDOW_MAX_SECONDS
    if window > limit:
        return (
            f"{evaluation_periods} periods of {period_seconds} s make {window} s, above the {limit} s CloudWatch "
            f"allows an alarm{' whose period is under an hour' if short else ''}"
        )
    return None


MAX_REQUIREMENT_SETS = 4
"""Auto Scaling takes "up to four separate sets of instance requirements per Auto Scaling group"
(botocore autoscaling model 2011-01-01, LaunchTemplateOverrides `InstanceRequirements`)."""


LUSTRE_PERSISTENT_2_THROUGHPUTS = (125, 250, 500, 1000)
LUSTRE_MAX_ASSOCIATIONS = 8
"""FSx for Lustre (read 2026-11-25): PERSISTENT_2 on SSD sells 125, 250, 500 or 1000 MB/s per TiB and
SCRATCH types take no PerUnitStorageThroughput (botocore fsx model 2018-03-01,
CreateFileSystemLustreConfiguration.PerUnitStorageThroughput); a file system has at most 8 data
repository associations (FSx for Lustre user guide, "Linking your file system to an Amazon S3 bucket")."""


def lustre_capacity_allowed(gib: int) -> bool:
    """SCRATCH_2 and PERSISTENT_2 on SSD: 1200 GiB, 2400 GiB, then increments of 2400 GiB (botocore fsx
    model, CreateFileSystem.StorageCapacity, read 2026-11-25)."""
    return gib == 1200 or (gib >= 2400 and gib % 2400 == 0)
