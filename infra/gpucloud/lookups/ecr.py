"""The private ECR repositories a stack names but does not create: its containers' images
(`groups[].services.containers[].image`) and its jobs' repositories (`groups[].jobs.ecrRepositories`).

A repository that does not exist plans clean otherwise, and the node's pull fails at run time. The
program reads those of the deploying account with pulumi-aws's `aws.ecr.getRepository`, so
`pulumi preview` stops on a missing one; a repository of another account is not read (its
repository policy, not the deployer's role, decides who may describe it) and is said not checked.
"""

from __future__ import annotations

import re

from gpucloud.config import StackSettings
from gpucloud.lookups.facts import AwsLookups
from gpucloud.lookups.problems import Problems


def named_repositories(settings: StackSettings) -> list[tuple[str, re.Match[str]]]:
    """Each ECR repository the stack names, with the key that names it."""
    named = []
    for index, group in enumerate(settings.config.groups):
        for number, container in enumerate(group.services.containers):
            if container.ecr:
                named.append((f"groups[{index}].services.containers[{number}].image", container.ecr))
        for number, match in enumerate(group.jobs.ecr_repository_matches):
            named.append((f"groups[{index}].jobs.ecrRepositories[{number}]", match))
    return named


def check_ecr_repositories(settings: StackSettings, lookups: AwsLookups, problems: Problems) -> None:
    """A missing repository of the deploying account is a problem naming its key; those not known
    (offline without facts) or of another account are one not-checked line."""
    found = []
    for key, match in named_repositories(settings):
        where = f"{match['account']}.dkr.ecr.{match['region']}.amazonaws.com/{match['repository']}"
        exists = None
        if match["account"] == lookups.account_id():
            exists = lookups.ecr_repository_exists(match["account"], match["region"], match["repository"])
        found.append((key, where, exists))
    problems.looked_up(
        found,
        lambda where: (f"ECR repository {where} does not exist (DescribeRepositories: "
                       "RepositoryNotFoundException): push the image there first, or name a repository that exists"),
        lambda names: (f"ECR repositories not checked ({names}): offline, give "
                       "the plan account facts from `gpucloud account snapshot`; one of another account is not read"))
