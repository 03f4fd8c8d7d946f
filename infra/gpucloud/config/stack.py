"""The whole stack config (`gpu-cloud:` keys and `aws:region`) as typed settings: plain data, which
`gpucloud.config.loader` parses and checks."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpucloud.config.access import AccessConfig, DataConfig
from gpucloud.config.network import NetworkConfig
from gpucloud.config.fields import ConfigModel, Email, ResourceName, TagValue, unique_names
from gpucloud.config.groups import GroupConfig
from gpucloud.config.operations import AccountConfig, BackupConfig, BudgetConfig, MonitoringConfig
from gpucloud.config.review import IntendedReplacements
from gpucloud.config.storage import StorageConfig
from gpucloud.naming import STACK_TAG, name_base


class StackConfig(ConfigModel):
    """Everything one project's stack declares under the `gpu-cloud:` namespace."""

    project: ResourceName
    """The project's name: the `Project` tag on every taggable resource (the budget filters on it) and, with the
    stack's name, the start of every name the stack builds."""
    owner: Email
    """The owner's e-mail address: the `Owner` tag, and the address subscribed to the project's SNS topic (alarms
    and budget alerts)."""
    cost_center: TagValue
    """The `CostCenter` tag on every taggable resource."""
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    data: DataConfig | None = None
    access: AccessConfig = Field(default_factory=AccessConfig)
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    budget: BudgetConfig
    backup: BackupConfig = Field(default_factory=BackupConfig)
    account: AccountConfig = Field(default_factory=AccountConfig)
    groups: list[GroupConfig] = Field(min_length=1, max_length=50)
    """The GPU instance groups, with unique names. The node role's inline policies name each group within IAM's
    10,240 characters, so long group and stack names fit fewer groups."""
    storage: StorageConfig = Field(default_factory=StorageConfig)
    intended_replacements: IntendedReplacements = Field(default_factory=list)
    """Resources (by the name `gpucloud plan --base` prints) this change means to replace or delete: their data-loss failure becomes a note."""

    @field_validator("groups")
    @classmethod
    def group_names_are_unique(cls, groups: list[GroupConfig]) -> list[GroupConfig]:
        return unique_names(groups, "group")

    @property
    def tags(self) -> dict[str, str]:
        """The tags every taggable resource carries."""
        return {
            "Project": self.project,
            "Owner": self.owner,
            "CostCenter": self.cost_center,
            "ManagedBy": "gpu-cloud",
        }


class StackSettings(BaseModel):
    """A parsed stack: its name, where it came from, the AWS region and the typed config."""

    model_config = ConfigDict(frozen=True)

    stack: str
    source: str
    region: str
    config: StackConfig

    @property
    def name_base(self) -> str:
        """What the names AWS wants unique per account start from (`gpucloud.naming.name_base`)."""
        return name_base(self.config.project, self.stack)

    @property
    def tags(self) -> dict[str, str]:
        """The config's tags plus the stack's own, which scopes what its nodes may touch."""
        return {**self.config.tags, STACK_TAG: self.name_base}
