"""The security groups a stack names but does not create (`groups[].endpoint.allowedSecurityGroupIds`):
an ingress rule referencing a group that does not exist fails at `pulumi up`. The program reads each
with pulumi-aws's `aws.ec2.getSecurityGroup`, so `pulumi preview` stops on a missing one."""

from __future__ import annotations

from gpucloud.config import StackSettings
from gpucloud.lookups.facts import AwsLookups
from gpucloud.lookups.problems import Problems


def named_security_groups(settings: StackSettings) -> list[tuple[str, str]]:
    """Each security group id the stack names, with the key that names it."""
    return [(f"groups[{index}].endpoint.allowedSecurityGroupIds[{number}]", group_id)
            for index, group in enumerate(settings.config.groups) if group.endpoint is not None
            for number, group_id in enumerate(group.endpoint.allowed_security_group_ids)]


def check_security_groups(settings: StackSettings, lookups: AwsLookups, problems: Problems) -> None:
    """A missing group is a problem naming its key; those not known are one not-checked line."""
    problems.looked_up(
        [(key, group_id, lookups.security_group_exists(group_id)) for key, group_id in named_security_groups(settings)],
        lambda group_id: (f"security group {group_id} does not exist in {settings.region} (DescribeSecurityGroups: "
                          "InvalidGroup.NotFound): name a group of the region"),
        lambda names: (f"security groups not checked ({names}): offline, give "
                       "the plan account facts from `gpucloud account snapshot`"))
