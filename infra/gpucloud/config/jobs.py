"""What `gpucloud run` may run on a group's nodes (`groups[].jobs`): the private ECR repositories
whose images `--image` may name.

The node pulls a job's image with its own role, like a container service's, so the node role may
pull exactly the repositories listed here and those of `services.containers`; `run` refuses an ECR
image from any other repository before it touches the group. An image from another registry needs
no entry (and no role), but cannot be reached with `network.egress: endpointsOnly`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated

from pydantic import Field, field_validator

from gpucloud.config.errors import NAMESPACE
from gpucloud.config.fields import ConfigModel, shaped
from gpucloud.config.services import ECR_REPOSITORY

if TYPE_CHECKING:
    from gpucloud.config.groups import GroupConfig
    from gpucloud.config.stack import StackConfig

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


def job_image_problem(config: StackConfig, group: GroupConfig, image: str, source: str) -> str | None:
    """Why the group's nodes could not pull `image` for `gpucloud run --image` (None: they can):
    their role pulls only the ECR repositories the stack names, and endpointsOnly reaches only ECR."""
    repository = ecr_repository_of(image)
    key = f"groups[{config.groups.index(group)}].jobs.ecrRepositories"
    if repository is not None and repository not in group.jobs.ecr_repositories:
        return (f"--image {image} is in ECR repository {repository}, which {key} of {source} does not list, so the "
                "nodes may not pull it: add it there and run pulumi up")
    if repository is None and config.network.egress == "endpointsOnly":
        return (f"--image {image} is not in ECR, and the stack's network.egress endpointsOnly reaches no other "
                f"registry: push it to ECR and list its repository in {key}")
    return None


def job_problems(config: StackConfig, region: str) -> list[tuple[str, str]]:
    """Without the internet, the nodes reach ECR through the stack's endpoints, in its region only."""
    if config.network.egress != "endpointsOnly":
        return []
    return [
        (f"{NAMESPACE}:groups[{index}].jobs.ecrRepositories[{number}]",
         f"{match.group(0)} is in ECR in {match['region']}, and the stack's ECR endpoints reach only {region}: "
         f"replicate it to {region} or use egress: nat")
        for index, group in enumerate(config.groups)
        for number, match in enumerate(group.jobs.ecr_repository_matches)
        if match["region"] != region
    ]
