"""What `gpucloud run` may run on a group's nodes (`groups[].jobs`): the private ECR repositories
whose images `--image` may name.

The node pulls a job's image with its own role, like a container service's, so the node role may
pull exactly the repositories listed here and those of `services.containers`; `run` refuses an ECR
image from any other repository before it touches the group. An image from another registry needs
no entry (and no role), but cannot be reached with `network.egress: endpointsOnly`.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator

from gpucloud.config.fields import ConfigModel, shaped
from gpucloud.config.services import ECR_REPOSITORY

EcrRepository = Annotated[str, shaped(
    ECR_REPOSITORY, "use a private ECR repository, <account>.dkr.ecr.<region>.amazonaws.com/<repository>, "
    "without a tag", 320)]

_ECR_IMAGE_REFERENCE = re.compile(ECR_REPOSITORY + r"(?::[^/@]*|@[^/]*)?")


class JobsConfig(ConfigModel):
    """What `gpucloud run` may run on the group's nodes."""

    ecr_repositories: list[EcrRepository] = Field(default_factory=list, max_length=20)
    """Private ECR repositories, `<account>.dkr.ecr.<region>.amazonaws.com/<repository>`, whose images
    `gpucloud run --image` may run on the group's nodes: the node role may pull from these (and from the
    services' images) only, and `run` refuses an ECR image from any other. With egress endpointsOnly, only
    repositories in the stack's region."""

    @field_validator("ecr_repositories")
    @classmethod
    def repositories_are_unique(cls, repositories: list[str]) -> list[str]:
        repeated = sorted({repository for repository in repositories if repositories.count(repository) > 1})
        if repeated:
            raise ValueError(f"lists {', '.join(repeated)} twice")
        return repositories

    @property
    def ecr_repository_matches(self) -> list[re.Match[str]]:
        """Each repository's account, region and name."""
        return [match for match in (re.fullmatch(ECR_REPOSITORY, repository) for repository in self.ecr_repositories)
                if match]


def ecr_repository_of(image: str) -> str | None:
    """`<registry>/<repository>` of an image in a private ECR registry; None for any other image."""
    match = _ECR_IMAGE_REFERENCE.fullmatch(image)
    return match.group(0)[: match.end("repository")] if match else None
