"""Each group's features and the image software they rely on, stated in the plan: what the default
image has is data read from its release notes, what an image of your own has is what the stack
asserts (`groups[].image.provides`), and without an assertion it is not checked."""

from __future__ import annotations

from typing import Any

from gpucloud.config import StackConfig
from gpucloud.config.image import Reliance, default_image
from gpucloud.config.rules.image import reliances


def _source(reliance: Reliance, carried: Any, where: str) -> str:
    if reliance.software in carried:
        return where
    return reliance.fallback or "MISSING"


def _group_entry(config: StackConfig, index: int) -> dict[str, Any]:
    group = config.groups[index]
    needs = reliances(config, index)
    provides = group.image.provides if group.image else None
    if group.ami_id is None:
        image = default_image()
        entry = {"group": group.name, "image": image["name"], "releaseNotesRead": image["read"], "checked": True}
        carried, where = image["provides"], "image"
    elif provides is None:
        entry = {"group": group.name, "image": group.ami_id, "checked": False,
                 "note": f"not checked: its contents are unknown; assert them in groups[{index}].image.provides"}
        carried, where = (), "not checked"
    else:
        entry = {"group": group.name, "image": group.ami_id, "checked": True, "asserted": list(provides)}
        carried, where = provides, "asserted"
    entry["reliesOn"] = [{"feature": need.feature, "software": need.software,
                          "source": _source(need, carried, where) if entry["checked"] else "not checked"}
                         for need in needs]
    return entry


def image_software(config: StackConfig) -> list[dict[str, Any]]:
    """One entry per group: its image, whether what it carries is known, and per feature the
    software it relies on and where that comes from (the image, an assertion, a first-boot install)."""
    return [_group_entry(config, index) for index in range(len(config.groups))]


def image_software_line(entry: dict[str, Any]) -> str:
    """`train: AWS Deep Learning ... (release notes read ...): storage.lustre -> lustreClient (image); ...`"""
    if not entry["checked"]:
        software = ", ".join(dict.fromkeys(item["software"] for item in entry["reliesOn"]))
        return f"{entry['group']}: amiId {entry['image']}: {entry['note']} (its features rely on {software})"
    image = (f"{entry['image']} (release notes read {entry['releaseNotesRead']})" if "releaseNotesRead" in entry
             else f"amiId {entry['image']} (asserted)")
    features: dict[str, list[str]] = {}
    for item in entry["reliesOn"]:
        features.setdefault(item["feature"], []).append(f"{item['software']} ({item['source']})")
    return f"{entry['group']}: {image}: " + "; ".join(f"{feature} -> {', '.join(items)}" for feature, items in features.items())
