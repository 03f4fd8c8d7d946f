"""`gpucloud connect`: reach a node in a private subnet through Session Manager port forwarding.

Nodes have no public IP. `access.jupyterCidrs`, `tensorboardCidrs` and `sshCidrs` help only over a
network routed into the VPC (VPN, Direct Connect, transit gateway); everyone else forwards a local
port to the node with `aws ssm start-session` (it needs the AWS CLI and its Session Manager plugin,
and `ssm:StartSession` on the instance and on the `AWS-StartPortForwardingSession` document).
With `start`, a group at zero is raised to one node first (`autoscaling:SetDesiredCapacity`),
and the command waits for that node, saying where each node's boot is from the phase lines the node
sends to the job log group (`logs:GetLogEvents` on its `boot-phases/` streams): what a group's
notebook user policy allows (documents/notebooks.py).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass

from gpucloud.config import StackSettings
from gpucloud.naming import autoscaling_group_name, job_log_group_name
from gpucloud.ops.node_phases import phase_reader
from gpucloud.ops.nodes import in_service_instance_ids, where_nodes_are

PORTS = {"jupyter": 8888, "tensorboard": 6006, "ssh": 22}
START_POLL_SECONDS = 15
"""How often a started group is asked for its node while the command waits."""
SSH_LOCAL_PORT = 2222
"""Port 22 is forwarded to this local port: the local sshd (or a missing root right) holds 22."""


class ConnectError(Exception):
    """Nothing to connect to, or the stack does not allow it; the message says what to do."""


@dataclass(frozen=True)
class Connection:
    instance_id: str
    group: str
    remote_port: int
    local_port: int
    region: str

    def command(self) -> list[str]:
        parameters = {"portNumber": [str(self.remote_port)], "localPortNumber": [str(self.local_port)]}
        return [
            "aws", "ssm", "start-session",
            "--target", self.instance_id,
            "--document-name", "AWS-StartPortForwardingSession",
            "--parameters", json.dumps(parameters, separators=(",", ":")),
            "--region", self.region,
        ]

    def shell(self) -> str:
        return shlex.join(self.command())


def find_connection(
    settings: StackSettings, autoscaling, group: str | None = None, port: int = 8888, local_port: int | None = None,
    *, start: bool = False, wait_seconds: float = 0, progress: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep, logs=None,
) -> Connection:
    """An in-service node of the group (the only group when none is named) and the forwarding to it; the
    local port is the remote one (SSH: 2222) unless given, so two stacks can forward 8888 side by side.
    With `start`, a group with no node in service and a desired capacity of 0 is raised to 1, and its
    node awaited for up to `wait_seconds` (a node is in service once its health gate has passed);
    with a CloudWatch Logs client, each wait line says where each node's boot is, from its own records."""
    config = settings.config
    if not config.access.ssm:
        raise ConnectError(f"stack {settings.stack!r} has access.ssm: false: its nodes run no Session Manager "
                           "channel; connect over a network routed into the VPC instead")
    names = [candidate.name for candidate in config.groups]
    if group is None:
        if len(names) > 1:
            raise ConnectError(f"stack {settings.stack!r} has several groups ({', '.join(names)}): pick one with --group")
        group = names[0]
    if group not in names:
        raise ConnectError(f"stack {settings.stack!r} has no group {group!r} (groups: {', '.join(names)})")
    asg = autoscaling_group_name(settings.name_base, group)
    in_service = in_service_instance_ids(autoscaling, asg)
    if not in_service and start:
        phases = phase_reader(logs, job_log_group_name(settings.name_base), asg) if logs is not None else None
        in_service = _start_and_wait(autoscaling, asg, wait_seconds, progress or (lambda _line: None), sleep, phases)
    if not in_service:
        raise ConnectError(f"group {group} ({asg}) has no node in service: scale it up (--start, its schedule or "
                           f"`aws autoscaling set-desired-capacity --auto-scaling-group-name {asg} --desired-capacity 1`) "
                           "and wait for the node to pass its launch hook")
    local = local_port or (SSH_LOCAL_PORT if port == 22 else port)
    return Connection(instance_id=in_service[0], group=group, remote_port=port, local_port=local, region=settings.region)


def _start_and_wait(autoscaling, asg: str, wait_seconds: float, progress: Callable[[str], None],
                    sleep: Callable[[float], None], phases: Callable[[str], str | None] | None = None) -> list[str]:
    """Raise the group from zero (a group already asking for nodes is left as it is) and poll for
    an in-service node until `wait_seconds` have passed."""
    [record] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg])["AutoScalingGroups"]
    if record["DesiredCapacity"] == 0:
        autoscaling.set_desired_capacity(AutoScalingGroupName=asg, DesiredCapacity=1)
        progress(f"{asg} was at zero: asked for 1 node")
    deadline = time.monotonic() + wait_seconds
    while not (in_service := in_service_instance_ids(autoscaling, asg)) and time.monotonic() < deadline:
        where = where_nodes_are(autoscaling, asg, phases)
        progress(f"waiting for a node of {asg} to pass its health gate"
                 + (f": {'; '.join(where)}; on a node, `gpucloud-node phases` names its boot phase" if where else ""))
        sleep(START_POLL_SECONDS)
    return in_service
