"""`gpucloud logs` of a job that has not started on a node says where the group's nodes are, in
the words of their lifecycle states, where no node has sent a boot-phase line yet
(tests/ops/test_where_nodes_boot.py: where one has)."""

from __future__ import annotations

from gpucloud.config import load_stack_file
from gpucloud.ops import job_control
from gpucloud.ops.jobs import Clients, new_job
from support import STACKS

SETTINGS = load_stack_file(STACKS / "Pulumi.vision-train.yaml")


class Booting:
    def describe_auto_scaling_groups(self, AutoScalingGroupNames):
        assert AutoScalingGroupNames == ["gpu-cloud-vision-train-trainers"]
        return {"AutoScalingGroups": [{"Instances": [
            {"InstanceId": "i-0bbbbbbbbbbbbbbbb", "LifecycleState": "InService"},
            {"InstanceId": "i-0aaaaaaaaaaaaaaaa", "LifecycleState": "Pending:Wait"}]}]}


class NothingSentYet:
    """CloudWatch Logs where no node has sent a boot-phase line yet (no stream)."""

    def filter_log_events(self, **request):
        assert request == {"logGroupName": "/gpu-cloud/vision-train/jobs",
                           "logStreamNamePrefix": "boot-phases/gpu-cloud-vision-train-trainers/"}
        return {"events": []}


def test_logs_of_a_job_not_yet_on_a_node_say_where_the_nodes_are(monkeypatch):
    job = new_job(SETTINGS, "trainers", ["python", "train.py"], nodes=2, job_id="trainers-20261128120000-beef")
    monkeypatch.setattr(job_control, "find_job", lambda clients, settings, job_id: job)
    printed: list[str] = []

    job_control.logs(Clients(autoscaling=Booting(), ec2=None, ssm=None, logs=NothingSentYet(), s3=None), SETTINGS, job.job_id,
                     say=printed.append)

    assert printed == [
        f"job {job.job_id}: no output yet (it has not started on a node)",
        "  i-0aaaaaaaaaaaaaaaa Pending:Wait (booting: boot, agent, mount and gate, its launch hook pending)",
        "  i-0bbbbbbbbbbbbbbbb InService (in service: starting its services)",
    ]
