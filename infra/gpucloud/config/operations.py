"""What watches the fleet and its money: GPU alarms, the monthly budget and volume backups."""

from __future__ import annotations

from pydantic import Field

from gpucloud.config.fields import ConfigModel


class MonitoringConfig(ConfigModel):
    """GPU alarms sent to the project's SNS topic (the owner's e-mail is subscribed)."""

    temperature_threshold_c: int = Field(default=85, ge=40, le=100)
    memory_saturation_percent: float = Field(default=95, gt=0, le=100)
    idle_utilization_percent: float = Field(default=5, gt=0, le=100)
    idle_minutes: int = Field(default=60, ge=10, le=1440)
    dashboard: bool = True


class BackupConfig(ConfigModel):
    """AWS Backup of persistent volumes: daily, kept this many days."""

    retention_days: int = Field(default=7, ge=1, le=3650)


class BudgetConfig(ConfigModel):
    """The project's monthly AWS Budgets cost budget, filtered on its `Project` tag."""

    monthly_usd: float = Field(gt=0, le=10_000_000)
