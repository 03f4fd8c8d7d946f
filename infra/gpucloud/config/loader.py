"""Parsing a stack's config once, at the edge: the `gpu-cloud:` keys into the models of
`gpucloud.config.stack`, then the cross-field rules (`gpucloud.config.rules`) over them, every
problem a one-line ConfigError naming the stack file and key."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from gpucloud.config.errors import NAMESPACE, ConfigError
from gpucloud.config.regions import region_problem
from gpucloud.config.rules.allocation import allocation_problems
from gpucloud.config.rules.cold_start import cold_start_problems
from gpucloud.config.rules.endpoint import endpoint_problems
from gpucloud.config.rules.image import image_problems
from gpucloud.config.rules.jobs import job_problems
from gpucloud.config.rules.network import network_problems
from gpucloud.config.rules.node_role import node_role_policy_problems
from gpucloud.config.rules.services import service_problems
from gpucloud.config.rules.storage import storage_problems
from gpucloud.config.stack import StackConfig, StackSettings
from gpucloud.config.suggest import did_you_mean, misspelt_namespace_problems
from gpucloud.naming import NAME_BASE_MAX_LENGTH, name_base


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
            message = "is not a known key" + (did_you_mean(StackConfig, location)
                                              or " (check its spelling against the config reference)")
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
    unknown_region = region_problem(region)
    if unknown_region:
        raise ConfigError(f"stack {stack!r} ({source})", [("aws:region", unknown_region)])
    _check_stack_name(stack, config.project, source)
    problems = [
        *network_problems(config),
        *service_problems(config, region),
        *job_problems(config, region),
        *storage_problems(config),
        *endpoint_problems(config),
        *image_problems(config),
        *cold_start_problems(config),
        *node_role_policy_problems(config, name_base(config.project, stack), region),
        *allocation_problems(config),
    ]
    if problems:
        raise ConfigError(f"stack {stack!r} ({source})", problems)
    return StackSettings(stack=stack, source=source, region=region, config=config)


def _check_stack_name(stack: str, project: str, source: str) -> None:
    """Pulumi stack names may hold `.`, which KMS aliases, SNS topics, dashboards and Backup vaults
    refuse; and the names built from it must stay within the shortest limit."""
    problems = []
    if not re.fullmatch(r"[A-Za-z0-9_-]+", stack):
        problems.append(("stack name", "may hold only letters, digits, '-' and '_' (the names of its "
                                       "resources are built from it, and KMS aliases, SNS topics and "
                                       "dashboards take no other characters)"))
    elif len(name_base(project, stack)) > NAME_BASE_MAX_LENGTH:
        problems.append(("stack name", f"with project {project!r} makes names from {name_base(project, stack)!r}, "
                                       f"longer than the {NAME_BASE_MAX_LENGTH} characters every name "
                                       "it builds fits in (AWS Backup vault names end at 50); use a shorter "
                                       "stack name, or name the stack after the project"))
    if problems:
        raise ConfigError(f"stack {stack!r} ({source})", problems)


def split_namespace(raw: Mapping[str, Any], *, stack: str, source: str) -> tuple[dict[str, Any], str | None]:
    """Pick the `gpu-cloud:` keys and `aws:region` out of a flat Pulumi config map."""
    misspelt = misspelt_namespace_problems(raw)
    if misspelt:
        raise ConfigError(f"stack {stack!r} ({source})", misspelt)
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
