"""GpuSecurityGroup: ingress only from listed CIDRs; node-to-node traffic only for multi-node groups;
Lustre from the project's file servers only where the stack has one.

A Lustre client's security group must admit TCP 988 and 1018-1023 from the file system's security
group: the file servers open LNet connections to their clients too (FSx for Lustre user guide, "File
system access control with Amazon VPC", section "Lustre client VPC security group rules",
https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html, read
2026-11-28). The guide's rows for traffic between clients are left out: the nodes mount the file
system and talk Lustre only to its servers, and a multi-node group's members already reach each
other on every port.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.components.shared_file_system import LUSTRE_PORTS

SSH_PORT = 22
JUPYTER_PORT = 8888
TENSORBOARD_PORT = 6006


@dataclass(frozen=True)
class GpuSecurityGroupArgs:
    vpc_id: pulumi.Input[str]
    """The VPC of the group."""
    description: str
    """The group's description (EC2 cannot change it later: a new one replaces the group)."""
    ssh_cidrs: Sequence[str] = ()
    """Ranges admitted on SSH (22); empty with Session Manager."""
    jupyter_cidrs: Sequence[str] = ()
    """Ranges admitted on JupyterLab's port."""
    tensorboard_cidrs: Sequence[str] = ()
    """Ranges admitted on TensorBoard's port."""
    allow_within_group: bool = False
    """All traffic between members (NCCL over EFA needs it); only for multi-node groups."""
    lustre_servers_security_group_id: pulumi.Input[str] | None = None
    """The project file system's security group, when the stack has one: its servers may reach the
    nodes on Lustre's ports."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""


class GpuSecurityGroup(pulumi.ComponentResource):
    """A security group with one rule per allowed CIDR and port.

    Egress is open to all destinations: nodes reach AWS APIs, S3, package mirrors and container
    registries, whose addresses are not fixed. Restrict it with VPC endpoints and a firewall
    outside this component if the project needs that.
    """

    security_group_id: pulumi.Output[str]
    """Id of the group, for launch templates and network interfaces."""

    def __init__(self, name: str, args: GpuSecurityGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:GpuSecurityGroup", name, None, opts)
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=args.description,
            tags={**args.tags, "Name": name},
            opts=pulumi.ResourceOptions(parent=self),
        )
        group_id = self.security_group.id
        child = pulumi.ResourceOptions(parent=self.security_group)
        self.ingress_rules: list[aws.vpc.SecurityGroupIngressRule] = []
        for label, port, cidrs in (
            ("ssh", SSH_PORT, args.ssh_cidrs),
            ("jupyter", JUPYTER_PORT, args.jupyter_cidrs),
            ("tensorboard", TENSORBOARD_PORT, args.tensorboard_cidrs),
        ):
            for index, cidr in enumerate(cidrs):
                family = {"cidr_ipv6": cidr} if ":" in cidr else {"cidr_ipv4": cidr}
                self.ingress_rules.append(
                    aws.vpc.SecurityGroupIngressRule(
                        f"{name}-{label}-{index}",
                        security_group_id=group_id,
                        description=f"{label} from {cidr}",
                        ip_protocol="tcp",
                        from_port=port,
                        to_port=port,
                        tags={**args.tags, "Name": f"{name}-{label}-{index}"},
                        opts=child,
                        **family,
                    )
                )
        if args.lustre_servers_security_group_id is not None:
            for low, high in LUSTRE_PORTS:
                self.ingress_rules.append(aws.vpc.SecurityGroupIngressRule(
                    f"{name}-lustre-{low}",
                    security_group_id=group_id,
                    description=f"Lustre TCP {low}-{high} from the project's file servers",
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    referenced_security_group_id=args.lustre_servers_security_group_id,
                    tags={**args.tags, "Name": f"{name}-lustre-{low}"},
                    opts=child,
                ))
        if args.allow_within_group:
            self.ingress_rules.append(
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-within-group",
                    security_group_id=group_id,
                    description="all traffic between members of a multi-node group (NCCL over EFA)",
                    ip_protocol="-1",
                    referenced_security_group_id=group_id,
                    tags={**args.tags, "Name": f"{name}-within-group"},
                    opts=child,
                )
            )
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-within-group-egress",
                security_group_id=group_id,
                description="all traffic to members of a multi-node group (EFA needs a self egress rule)",
                ip_protocol="-1",
                referenced_security_group_id=group_id,
                tags={**args.tags, "Name": f"{name}-within-group-egress"},
                opts=child,
            )
        self.egress_rule = aws.vpc.SecurityGroupEgressRule(
            f"{name}-egress",
            security_group_id=group_id,
            description="all egress: AWS APIs, S3 and package mirrors have no fixed addresses",
            ip_protocol="-1",
            cidr_ipv4="0.0.0.0/0",
            tags={**args.tags, "Name": f"{name}-egress"},
            opts=child,
        )
        self.security_group_id = group_id
        self.register_outputs({"securityGroupId": self.security_group_id})
