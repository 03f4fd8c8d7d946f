"""Required tags on every taggable resource, for cost and ownership reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpucloud.policy.model import UNKNOWN, PolicyConfig, Report
from gpucloud.policy.resource_types import AUTOSCALING_GROUP
from gpucloud.policy.taggable import is_taggable
from gpucloud.policy.values import mappings, peek, text, unknown_at

# ---------------------------------------------------------------- required-tags


def _tag_values(resource_type: str, props: Mapping[str, Any], key: str) -> list[tuple[Any, Any, Any]]:
    """The tag's value in each place tags come from, with the container and key it was read at.

    Values may be UNKNOWN: tagsAll (tags plus the provider's default tags) is unknown while a
    new resource is previewed.
    """
    if resource_type == AUTOSCALING_GROUP:  # a list of {key, value, propagateAtLaunch}
        tags = {str(tag.get("key")): tag.get("value") for tag in mappings(props.get("tags"))}
        return [(tags.get(key), tags, key)]
    found = []
    for source in ("tagsAll", "tags"):
        tags = peek(props, source)
        if tags is UNKNOWN:
            found.append((UNKNOWN, props, source))
        elif isinstance(tags, Mapping):
            found.append((peek(tags, key), tags, key))
    return found


def validate_required_tags(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if not is_taggable(resource_type):
        return
    config = config or PolicyConfig()
    missing = []
    for key in config.required_tags:
        values = _tag_values(resource_type, props, key)
        if any(value is not UNKNOWN and text(value) is not None for value, _, _ in values):
            continue
        unknown = [(container, where) for value, container, where in values if value is UNKNOWN]
        if unknown:
            raise unknown_at(*unknown[0])  # an unknown value or tagsAll may still hold the tag
        missing.append(key)
    if missing:
        report(
            f"Resource is missing the required tags {', '.join(missing)} (cost and ownership reports "
            f"group by them). Fix: pass tags with non-empty {', '.join(config.required_tags)}."
        )
