"""A schedule's recurrence is held to the values each crontab field takes, as Auto Scaling reads it,
so the stack file is refused for a recurrence that only the cost estimate used to notice."""

from __future__ import annotations

import pytest

from gpucloud.config import ConfigError
from support import minimal_config, settings_for


def with_schedule(recurrence: str) -> dict:
    return minimal_config(groups=[{"name": "workers", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "scaling": {
        "schedules": [{"name": "nightly", "recurrence": recurrence, "desiredCapacity": 0}]}}])


@pytest.mark.parametrize(
    "recurrence, reason",
    [
        ("0 25 * * *", "25 is outside 0-23, the hour field's range"),
        ("60 8 * * *", "60 is outside 0-59, the minute field's range"),
        ("0 8 0 * *", "0 is outside 1-31, the day of month field's range"),
        ("0 8 * 13 *", "13 is outside 1-12, the month field's range"),
        ("0 8 * * 8", "8 is outside 0-7, the day of week field's range"),
        ("0 8 * * MON-FRX", "'FRX' is not a day of week"),
        ("0 18-8 * * *", "the hour range 18-8 runs backwards"),
        ("*/0 * * * *", "step '0' is not a positive number"),
    ],
)
def test_a_recurrence_with_a_value_its_field_does_not_take_is_refused(recurrence, reason):
    with pytest.raises(ConfigError) as error:
        settings_for(with_schedule(recurrence))

    assert reason in dict(error.value.problems)["gpu-cloud:groups[0].scaling.schedules[0].recurrence"]


@pytest.mark.parametrize("recurrence", ["0 8 * * MON-FRI", "*/15 0-23/2 1,15 JAN-DEC 0-7", "30 0 1 1,6,12 *"])
def test_crontab_recurrences_pass(recurrence):
    assert settings_for(with_schedule(recurrence)).config.groups[0].scaling.schedules[0].recurrence == recurrence
