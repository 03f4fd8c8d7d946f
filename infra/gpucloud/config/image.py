"""What a group's image carries (`groups[].image`), and what the default image ships; the rule that
refuses a feature the image lacks is `gpucloud.config.rules.image`.

The default image's contents are data, read from its release notes (`data/image_software.json`).
An image of your own (`amiId`) is unknown until `image.provides` asserts what it carries; without
that assertion the plan says "not checked" and refuses nothing. A feature whose software the node
installs at first boot when the image lacks it (python3-venv, the CloudWatch agent, mount-s3 with
`install: download`) relies on that install, not on the image.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from pydantic import Field, field_validator

from gpucloud.config.fields import ConfigModel

Software = Literal["python3", "pythonVenv", "docker", "nvidiaContainerToolkit", "lustreClient", "mountS3", "efa",
                   "ofiNccl", "cloudwatchAgent", "jupyterlab", "tensorboard"]
DEFAULT_IMAGE = "dlami-base-oss-ubuntu-22.04-x86_64"
"""The family the public SSM parameter of lookups/facts.py picks when a group has no amiId."""


class ImageConfig(ConfigModel):
    """What the group's own image (amiId) carries, so the plan can check each feature against it."""

    provides: list[Software] | None = Field(default=None, max_length=11)
    """With amiId: the software the image carries (python3, pythonVenv, docker, nvidiaContainerToolkit, lustreClient,
    mountS3, efa, ofiNccl, cloudwatchAgent, jupyterlab, tensorboard); a feature that relies on something not listed is
    refused. Unset: the plan says the image is not checked. Not with the default image, whose contents are known."""

    @field_validator("provides")
    @classmethod
    def provides_each_once(cls, provides: list[str] | None) -> list[str] | None:
        if provides and len(set(provides)) != len(provides):
            raise ValueError("lists a piece of software twice")
        return provides


@dataclass(frozen=True)
class Reliance:
    """One feature of a group and one piece of software it needs on the node."""

    feature: str
    """The stack key that turns the feature on, without the namespace (`storage.lustre`)."""
    software: str
    fallback: str | None = None
    """How the node gets the software when the image lacks it; None: it must be in the image."""


@functools.cache
def image_catalog() -> dict[str, Any]:
    """`data/image_software.json`: the software vocabulary and what each image family ships."""
    text = resources.files("gpucloud").joinpath("data", "image_software.json").read_text(encoding="utf-8")
    return json.loads(text)


def default_image() -> dict[str, Any]:
    return image_catalog()["images"][DEFAULT_IMAGE]
