"""What watches the fleet and its money (GPU alarms, the monthly budget, volume backups), and what
the stack may set up in the account."""

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


class AccountConfig(ConfigModel):
    """What the stack may set up in the account that other stacks share."""

    create_service_linked_role: bool = False
    """Create the Auto Scaling service-linked role when the account has none (kept on destroy:
    every Auto Scaling group of the account uses it). Off: a missing role is a config error."""


class BudgetConfig(ConfigModel):
    """The project's monthly AWS Budgets cost budget, filtered on its `Project` tag."""

    monthly_usd: float = Field(gt=0, le=10_000_000)
