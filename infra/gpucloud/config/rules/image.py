"""The rule that refuses a node feature its group's image lacks (`groups[].image`): what each
feature relies on, read from the code that runs it, against what the image carries (the default
image's release notes, or `image.provides` for an image of your own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpucloud.config.errors import NAMESPACE
from gpucloud.config.image import Reliance, default_image

if TYPE_CHECKING:
    from gpucloud.config.groups import GroupConfig
    from gpucloud.config.stack import StackConfig


def reliances(config: StackConfig, index: int) -> list[Reliance]:
    """What group `index`'s features need on its nodes, read from the code that runs them: the agent
    (node/), the CloudWatch set-up (userdata/scripts.py), the mounts (node/shared_storage.py), EFA
    (node/tuning.py), the services (node/jupyter.py, tensorboard.py, containers.py) and container jobs
    (node/launcher.py)."""
    group = config.groups[index]
    key = f"groups[{index}]"
    found = [Reliance("node agent", "python3"),
             Reliance("CloudWatch metrics", "cloudwatchAgent", "installed at first boot from amazoncloudwatch-agent-<region>")]
    storage = config.storage
    if storage.lustre:
        found.append(Reliance("storage.lustre", "lustreClient"))
    if storage.s3_mount:
        download = storage.s3_mount.install == "download"
        found.append(Reliance("storage.s3Mount.install", "mountS3",
                              "downloaded at boot (install: download)" if download else None))
    if group.multi_node:
        found += [Reliance(f"{key}.multiNode", "efa"), Reliance(f"{key}.multiNode", "ofiNccl")]
    services = group.services
    if services.containers:
        found.append(Reliance(f"{key}.services.containers", "docker"))
        if any(container.gpus != 0 for container in services.containers):
            found.append(Reliance(f"{key}.services.containers", "nvidiaContainerToolkit"))
    if group.jobs.ecr_repositories:
        # gpucloud run --image: `docker run --gpus all` (node/launcher.py)
        found += [Reliance(f"{key}.jobs.ecrRepositories", "docker"),
                  Reliance(f"{key}.jobs.ecrRepositories", "nvidiaContainerToolkit")]
    for name, service, software in (("jupyter", services.jupyter, "jupyterlab"),
                                    ("tensorboard", services.tensorboard, "tensorboard")):
        if service is None:
            continue
        if service.install == "pip":
            found.append(Reliance(f"{key}.services.{name}.install", "pythonVenv",
                                  "apt-get install python3-venv at the service's first start"))
        else:
            found.append(Reliance(f"{key}.services.{name}.install", software))
    return found


def _fix(software: list[str], index: int) -> str:
    listed = ", ".join(software)
    if software == ["mountS3"]:
        return ("use storage.s3Mount.install: download (it needs egress nat), or an image of your own that has it "
                f"(amiId, with mountS3 in groups[{index}].image.provides)")
    return f"use an image of your own that has it (amiId, with {listed} in groups[{index}].image.provides)"


def _missing(needs: list[Reliance], carried: Any) -> dict[str, list[str]]:
    """Feature key -> the software it needs that the image does not carry and the node does not install."""
    missing: dict[str, list[str]] = {}
    for need in needs:
        if need.fallback is None and need.software not in carried:
            missing.setdefault(need.feature, []).append(need.software)
    return missing


def _group_problems(group: GroupConfig, index: int, needs: list[Reliance]) -> list[tuple[str, str]]:
    provides = group.image.provides if group.image else None
    if group.ami_id is None:
        image = default_image()
        # rules/services.py already refuses install: image on the default image
        needs = [need for need in needs if need.software not in ("jupyterlab", "tensorboard")]
        return [(f"{NAMESPACE}:{feature}", (
            f"relies on {' and '.join(software)} in the image, and group {group.name!r} runs the default image "
            f"({image['name']}), which lacks {'it' if len(software) == 1 else 'them'}: "
            + "; ".join(image["lacks"].get(item, "not in its release notes") for item in software)
            + f" (release notes read {image['read']}, data/image_software.json); {_fix(software, index)}"))
            for feature, software in _missing(needs, image["provides"]).items()]
    if provides is None:
        return []
    return [(f"{NAMESPACE}:{feature}", (
        f"relies on {' and '.join(software)} in the image, and groups[{index}].image.provides says amiId "
        f"{group.ami_id} does not carry {'it' if len(software) == 1 else 'them'}: add {', '.join(software)} there if "
        "the image has it, or build the image with it"))
        for feature, software in _missing(needs, provides).items()]


def image_problems(config: StackConfig) -> list[tuple[str, str]]:
    """Each feature whose software the group's image lacks, by the key that turns the feature on
    (a stack-wide key once, for the first group it fails on)."""
    problems: dict[str, str] = {}
    for index, group in enumerate(config.groups):
        if group.ami_id is None and group.image is not None and group.image.provides is not None:
            problems.setdefault(f"{NAMESPACE}:groups[{index}].image.provides", (
                "asserts what an image of your own carries, but the group runs the default image, whose contents "
                "are known (data/image_software.json): remove it, or give amiId"))
            continue
        for key, message in _group_problems(group, index, reliances(config, index)):
            problems.setdefault(key, message)
    return list(problems.items())
