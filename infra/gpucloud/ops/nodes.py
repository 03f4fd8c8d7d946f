"""The one way `connect` and the job commands find a stack's nodes: a group's in-service
instances (past the launch hook, so past the health gate), and their private addresses."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    instance_id: str
    private_ip: str


def in_service_instance_ids(autoscaling, group_name: str) -> list[str]:
    """Instances of the Auto Scaling group that are InService and healthy, sorted by id. A node
    reaches InService only once its launch lifecycle hook is completed, which the node agent does
    after the GPU health gate passes."""
    found = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])["AutoScalingGroups"]
    return sorted(
        instance["InstanceId"]
        for record in found
        for instance in record.get("Instances", [])
        if instance.get("LifecycleState") == "InService" and instance.get("HealthStatus", "Healthy") == "Healthy"
    )


def ordered_nodes(ec2, instance_ids: list[str]) -> list[Node]:
    """The instances with their private IPv4 addresses, in numeric address order: the stable order
    every node of a job agrees on (the first is the rendezvous master)."""
    if not instance_ids:
        return []
    addresses: dict[str, str] = {}
    paginator = ec2.get_paginator("describe_instances")
    for page in paginator.paginate(InstanceIds=list(instance_ids)):
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                if instance.get("PrivateIpAddress"):
                    addresses[instance["InstanceId"]] = instance["PrivateIpAddress"]
    nodes = [Node(instance_id, addresses[instance_id]) for instance_id in instance_ids if instance_id in addresses]
    return sorted(nodes, key=lambda node: ipaddress.IPv4Address(node.private_ip))


LIFECYCLE_WORDS = {
    "Pending": "launching",
    "Pending:Wait": "booting: boot, agent, mount and gate, its launch hook pending",
    "Pending:Proceed": "past its gate, entering service",
    "Warmed:Pending:Wait": "preparing for the warm pool (pulling images where warmPool.prepullImages is on)",
    "InService": "in service: starting its services",
}
"""What each Auto Scaling lifecycle state means for a node of this package (its gate completes the
launch hook; `gpucloud-node phases` on the node names the phase it is in)."""


def where_nodes_are(autoscaling, group_name: str, phases: Callable[[str], str | None] | None = None) -> list[str]:
    """`i-0123... Pending:Wait (booting: ...)` for each instance of the group, sorted by id; with
    `phases` (ops/node_phases.phase_reader), followed by the node's own word on its boot:
    `; boot phases: pull server (2m10s so far), after boot 2m58s, ...`."""
    found = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])["AutoScalingGroups"]
    instances = sorted((instance for record in found for instance in record.get("Instances", [])),
                       key=lambda instance: instance["InstanceId"])
    lines = []
    for instance in instances:
        state = instance.get("LifecycleState")
        line = f"{instance['InstanceId']} {state}" + (f" ({LIFECYCLE_WORDS[state]})" if state in LIFECYCLE_WORDS else "")
        where = phases(instance["InstanceId"]) if phases else None
        lines.append(line + (f"; boot phases: {where}" if where else ""))
    return lines
