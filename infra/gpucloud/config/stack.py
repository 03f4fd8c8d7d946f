"""The whole stack config (`gpu-cloud:` keys and `aws:region`), parsed once into typed settings."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpucloud.config.access import AccessConfig, DataConfig, NetworkConfig
from gpucloud.config.errors import NAMESPACE, ConfigError
from gpucloud.config.fields import ConfigModel, Email, ResourceName, TagValue, unique_names
from gpucloud.config.groups import GroupConfig
from gpucloud.config.operations import BackupConfig, BudgetConfig, MonitoringConfig


class StackConfig(ConfigModel):
    """Everything one project's stack declares under the `gpu-cloud:` namespace."""

    project: ResourceName
    owner: Email
    cost_center: TagValue
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    data: DataConfig | None = None
    access: AccessConfig = Field(default_factory=AccessConfig)
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    budget: BudgetConfig
    backup: BackupConfig = Field(default_factory=BackupConfig)
    groups: list[GroupConfig] = Field(min_length=1, max_length=50)

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


def _key_path(location: tuple[Any, ...]) -> str:
    """`gpu-cloud:groups[0].scaling`; a key that is not a plain word shows as its repr in
    brackets (`dimensions['a b']`), so a hostile key in a stack file cannot break the message."""
    if not location:
        return NAMESPACE
    if location[-1] == "[key]":  # pydantic's marker for an invalid dict key
        location = location[:-1]
    path = f"{NAMESPACE}:"
    for index, part in enumerate(location):
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_\-]+", str(part)):
            path += f".{part}" if index else str(part)
        else:
            path += f"[{part!r}]"
    return path


def _problems(error: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for item in error.errors(include_url=False):
        location = tuple(part for part in item["loc"] if not str(part).startswith("function-"))
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "is not a known key (check its spelling against the config reference)"
        problems.append((_key_path(location), message))
    return problems


def parse_stack_config(values: Mapping[str, Any], *, stack: str, source: str, region: str) -> StackSettings:
    """Validate `gpu-cloud:` values (namespace already stripped) into typed settings."""
    try:
        config = StackConfig.model_validate(dict(values), by_alias=True)
    except ValidationError as error:
        raise ConfigError(f"stack {stack!r} ({source})", _problems(error)) from None
    if not isinstance(region, str) or not re.fullmatch(r"[a-z]{2}(-gov)?-[a-z]+-\d", region):
        raise ConfigError(f"stack {stack!r} ({source})", [("aws:region", f"{region!r} is not an AWS region")])
    return StackSettings(stack=stack, source=source, region=region, config=config)


def split_namespace(raw: Mapping[str, Any], *, stack: str, source: str) -> tuple[dict[str, Any], str | None]:
    """Pick the `gpu-cloud:` keys and `aws:region` out of a flat Pulumi config map."""
    values: dict[str, Any] = {}
    region = None
    for key, value in raw.items():
        namespace, _, name = str(key).partition(":")
        if key == "aws:region":
            region = value
        elif namespace == NAMESPACE:
            if isinstance(value, dict) and set(value) == {"secure"}:
                raise ConfigError(
                    f"stack {stack!r} ({source})",
                    [(key, "is a secret; gpu-cloud settings are plain values (nothing here is secret)")],
                )
            values[name] = value
    return values, region
