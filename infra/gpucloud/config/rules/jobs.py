"""Rules between a group's jobs (`groups[].jobs`) and the rest of the stack: which images its nodes
may pull for `gpucloud run --image`, and, without the internet, the ECR repositories' region."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpucloud.config.errors import NAMESPACE
from gpucloud.config.jobs import ecr_repository_of
from gpucloud.config.services import IMAGE_REFERENCE

if TYPE_CHECKING:
    from gpucloud.config.groups import GroupConfig
    from gpucloud.config.stack import StackConfig


def job_image_problem(config: StackConfig, group: GroupConfig, image: str, source: str) -> str | None:
    """Why the group's nodes could not pull `image` for `gpucloud run --image` (None: they can):
    their role pulls only the ECR repositories the stack names, and endpointsOnly reaches only ECR;
    and a job's image is pinned, as a container service's is (`ContainerConfig.image`)."""
    unpinned = unpinned_image_problem(image)
    if unpinned:
        return unpinned
    repository = ecr_repository_of(image)
    key = f"groups[{config.groups.index(group)}].jobs.ecrRepositories"
    if repository is not None and repository not in group.jobs.ecr_repositories:
        return (f"--image {image} is in ECR repository {repository}, which {key} of {source} does not list, so the "
                "nodes may not pull it: add it there and run pulumi up")
    if repository is None and config.network.egress == "endpointsOnly":
        return (f"--image {image} is not in ECR, and the stack's network.egress endpointsOnly reaches no other "
                f"registry: push it to ECR and list its repository in {key}")
    return None


def unpinned_image_problem(image: str) -> str | None:
    """A job's nodes each pull the image when the job reaches them, and a node that joins on a resume
    pulls it again: a tag that moves (`latest`, which Docker pulls for a reference without a tag:
    `docker pull NAME[:TAG|@DIGEST]`, moby/moby issue 5047, read 2026-11-28) could give the nodes of
    one job different images. A version tag or a digest keeps them one."""
    if re.fullmatch(IMAGE_REFERENCE, image) and not image.endswith(":latest"):
        return None
    pin = "pin a version tag ([registry/]repository:tag) or a digest ([registry/]repository@sha256:<digest>)"
    if image.endswith(":latest") or ("@" not in image and ":" not in image.rsplit("/", 1)[-1]):
        moving = "names the tag latest" if image.endswith(":latest") else "names no tag (Docker pulls latest)"
        return f"--image {image} {moving}, which moves: a node that joins the job on a resume could pull another image; {pin}"
    return f"--image {image} is not an image reference Docker takes: {pin}, in lower case"


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
