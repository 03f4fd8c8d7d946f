"""`gpucloud run`, `logs` and `stop` against moto: instance selection and order, the desired
capacity raise, the rendezvous parameters the job document gets, resuming on replaced nodes and
the two ways a job stops instead, following the output, and stopping a job.

moto runs no SSM Agent: every invocation it records is `Success` at once, and it has no
CancelCommand. `ScriptedSsm` answers invocation statuses from the test's script and records
cancels; everything else (the document, SendCommand, ListCommands) is moto's."""

from __future__ import annotations

import base64
import ipaddress
import json
from collections.abc import Callable

import time

import pytest
from botocore.exceptions import ClientError

from gpucloud.config import load_stack_file
from gpucloud.naming import job_log_group_name
from gpucloud.ops.job_control import logs, stop
from gpucloud.ops.jobs import Clients, Clock, Job, JobError, new_job, run
from gpucloud.ops.nodes import ordered_nodes
from gpucloud.testing import moto_account, service_model
from access_recording import stood_in
from support import STACKS, job_resources

REGION = "us-east-1"
SETTINGS = load_stack_file(STACKS / "Pulumi.vision-train.yaml")
GROUP = "gpu-cloud-vision-train-trainers"
BUCKET = "example-vision-data"
COMMAND = ["torchrun", "--nnodes", "$NNODES", "--rdzv-backend", "c10d", "train.py", "--lr", "3e-4"]


class FakeClock(Clock):
    def __init__(self, on_sleep: Callable[[], None] = lambda: None):
        self.time = 0.0
        self.on_sleep = on_sleep
        super().__init__(now=lambda: self.time, sleep=self._sleep)

    def _sleep(self, seconds: float) -> None:
        self.time += seconds
        self.on_sleep()


class ScriptedSsm:
    """moto's SSM client, with invocation statuses from `status(command_id, instance_id, calls)`
    and CancelCommand recorded; SendCommand calls are recorded with every argument. The calls it
    answers itself are still the job commands' (access_recording.stood_in)."""

    stands_in_for_aws = True

    def __init__(self, client, status: Callable[[str, str, int], tuple[str, int]]):
        self.client = client
        self.status = status
        self.sent: list[dict] = []
        self.cancelled: list[str] = []
        self.calls: dict[str, int] = {}

    def send_command(self, **request):
        answer = self.client.send_command(**request)
        self.sent.append({**request, "CommandId": answer["Command"]["CommandId"]})
        return answer

    def get_command_invocation(self, CommandId, InstanceId):
        stood_in("ssm", "GetCommandInvocation", {"CommandId": CommandId, "InstanceId": InstanceId})
        self.calls[CommandId] = self.calls.get(CommandId, 0) + 1
        status, code = self.status(CommandId, InstanceId, self.calls[CommandId])
        return {"CommandId": CommandId, "InstanceId": InstanceId, "Status": status, "ResponseCode": code}

    def cancel_command(self, CommandId, InstanceIds=None):
        stood_in("ssm", "CancelCommand", {"CommandId": CommandId})
        self.cancelled.append(CommandId)
        return {}

    def __getattr__(self, name):
        return getattr(self.client, name)


@pytest.fixture
def aws():
    """A moto account (the engine's, set up without moto's default images) holding what a deployed
    stack gives the job commands: the group, the data bucket, the job log group and document."""
    with moto_account(REGION) as account:
        session = account.session
        job_resources(session, SETTINGS, GROUP, BUCKET)
        yield session


def clients_with(session, status=lambda command, instance, calls: ("Success", 0)) -> Clients:
    clients = Clients.of(session)
    clients.ssm = ScriptedSsm(clients.ssm, status)
    return clients


def private_ips(session) -> dict[str, str]:
    reservations = session.client("ec2").describe_instances()["Reservations"]
    return {instance["InstanceId"]: instance["PrivateIpAddress"] for reservation in reservations
            for instance in reservation["Instances"] if instance["State"]["Name"] == "running"}


@pytest.mark.access_calls("person:jobRunner", "run")
def test_run_raises_the_group_and_sends_the_rendezvous_in_address_order(aws):
    clients = clients_with(aws)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=3, gpus_per_node=8, job_id="trainers-20261125190000-ab12")
    said: list[str] = []

    outcome = run(clients, SETTINGS, job, say=said.append, clock=FakeClock())

    group = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    assert group["DesiredCapacity"] == 3 and "raising gpu-cloud-vision-train-trainers from 1 to 3 nodes" in said
    [sent] = clients.ssm.sent
    addresses = private_ips(aws)
    ordered = sorted(addresses.values(), key=ipaddress.IPv4Address)
    parameters = {name: value for name, [value] in sent["Parameters"].items()}
    assert parameters["nodes"] == ",".join(ordered), "numeric address order: the first node is MASTER_ADDR"
    assert [addresses[instance] for instance in sent["InstanceIds"]] == ordered
    assert parameters | {"commandB64": None} == {
        "action": "launch", "job": "trainers-20261125190000-ab12", "nodes": ",".join(ordered), "port": "29500",
        "gpusPerNode": "8", "image": "", "attempt": "0", "commandB64": None,
        "checkpointUri": "s3://example-vision-data/runs/vision-train/jobs/trainers-20261125190000-ab12/"}
    assert json.loads(base64.b64decode(parameters["commandB64"])) == COMMAND
    assert sent["DocumentName"] == "gpu-cloud-vision-train-run"
    assert sent["CloudWatchOutputConfig"] == {"CloudWatchLogGroupName": "/gpu-cloud/vision-train/jobs",
                                              "CloudWatchOutputEnabled": True}
    assert [(result.rank, result.node.private_ip, result.status, result.exit_code) for result in outcome.results] == [
        (rank, address, "Success", 0) for rank, address in enumerate(ordered)]
    assert outcome.exit_code == 0 and outcome.stopped is None
    record = json.loads(aws.client("s3").get_object(
        Bucket=BUCKET, Key="runs/vision-train/jobs/trainers-20261125190000-ab12/job.json")["Body"].read())
    assert record["command"] == COMMAND and [attempt["attempt"] for attempt in record["attempts"]] == [0]


def test_a_node_exit_status_is_reported_and_becomes_the_exit_code(aws):
    failing: dict[str, str] = {}

    def status(command, instance, calls):
        failing.setdefault("instance", instance)
        return ("Failed", 3) if instance == failing["instance"] else ("Success", 0)

    outcome = run(clients_with(aws, status), SETTINGS, new_job(SETTINGS, "trainers", COMMAND, nodes=2),
                  say=lambda line: None, clock=FakeClock())

    assert sorted((result.status, result.exit_code) for result in outcome.results) == [("Failed", 3), ("Success", 0)]
    assert outcome.exit_code == 3


def large_group(session, nodes: int):
    """The trainers group grown to `nodes` in service, and stack settings whose trainers allow that many."""
    session.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName=GROUP, MaxSize=nodes, DesiredCapacity=nodes)
    groups = [group.model_copy(update={"max_size": nodes}) if group.name == "trainers" else group
              for group in SETTINGS.config.groups]
    return SETTINGS.model_copy(update={"config": SETTINGS.config.model_copy(update={"groups": groups})})


def test_a_job_on_more_than_50_nodes_goes_out_50_instances_a_command_and_stops_the_same_way(aws):
    settings = large_group(aws, 60)
    clients = clients_with(aws, lambda command, instance, calls: ("InProgress", -1) if calls <= 60 else ("Success", 0))
    service_model.install(clients.ssm.client)  # AWS's model: SendCommand takes at most 50 InstanceIds
    job = new_job(settings, "trainers", COMMAND, nodes=60, job_id="trainers-20261125190000-0060")

    outcome = run(clients, settings, job, say=lambda line: None, clock=FakeClock())

    ordered = sorted(private_ips(aws).items(), key=lambda item: ipaddress.IPv4Address(item[1]))
    assert [len(request["InstanceIds"]) for request in clients.ssm.sent] == [50, 10]
    assert [instance for request in clients.ssm.sent for instance in request["InstanceIds"]] == [iid for iid, _ in ordered]
    assert {request["Parameters"]["nodes"][0] for request in clients.ssm.sent} == {",".join(ip for _, ip in ordered)}
    assert outcome.exit_code == 0 and len(outcome.results) == 60
    [attempt] = job.attempts
    assert [len(instances) for instances in attempt.commands.values()] == [50, 10]

    clients.ssm.status = lambda command, instance, calls: ("InProgress", -1)
    stop(clients, settings, job.job_id, say=lambda line: None)

    assert clients.ssm.cancelled == list(attempt.commands)
    assert [len(request["InstanceIds"]) for request in clients.ssm.sent[2:]] == [50, 10]
    assert all(request["Parameters"]["action"] == ["launch-stop"] for request in clients.ssm.sent[2:])


@pytest.mark.access_calls("person:jobRunner", "stop")
def test_without_a_record_a_job_on_more_than_50_nodes_is_found_again_from_both_its_commands(aws):
    grown = large_group(aws, 60)
    settings = grown.model_copy(update={"config": grown.config.model_copy(update={"data": None})})
    clients = clients_with(aws, lambda command, instance, calls: ("InProgress", -1) if calls <= 60 else ("Success", 0))
    job = new_job(settings, "trainers", COMMAND, nodes=60, job_id="trainers-20261125190000-0061")
    run(clients, settings, job, say=lambda line: None, clock=FakeClock())
    clients.ssm.status = lambda command, instance, calls: ("InProgress", -1)
    sent_to = {request["CommandId"]: request["InstanceIds"] for request in clients.ssm.sent}

    class Pages:
        """moto's ListCommands, each command with the instances it was sent to: moto adds every
        instance of the region to a command sent without Targets (moto/ssm/models.py, Command)."""

        stands_in_for_aws = True

        def paginate(self):
            for page in clients.ssm.client.get_paginator("list_commands").paginate():
                yield {**page, "Commands": [{**command, "InstanceIds": sent_to[command["CommandId"]]}
                                            for command in page["Commands"]]}

    clients.ssm.get_paginator = lambda name: Pages()
    found = stop(clients, settings, job.job_id, say=lambda line: None)

    assert found.nodes == 60 and [attempt.attempt for attempt in found.attempts] == [0]
    assert found.attempts[0].commands == job.attempts[0].commands
    assert [node.instance_id for node in found.attempts[0].nodes] == [node.instance_id for node in job.attempts[0].nodes]
    assert sorted(clients.ssm.cancelled) == sorted(job.attempts[0].commands)


def test_a_record_written_before_batches_still_reads():
    record = {"job_id": "trainers-x", "stack": "vision-train", "group": "trainers", "group_name": GROUP, "nodes": 1,
              "command": ["train"], "attempts": [{"attempt": 0, "command_id": "c-1",
                                                  "nodes": [{"instance_id": "i-1", "private_ip": "10.0.0.1"}]}]}
    [attempt] = Job.from_json(json.dumps(record)).attempts
    assert attempt.commands == {"c-1": ["i-1"]} and attempt.command_of("i-1") == "c-1"


def test_a_send_that_fails_stops_what_was_sent_and_lowers_the_group_back(aws):
    settings = large_group(aws, 60)
    aws.client("autoscaling").set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=2)
    clients = clients_with(aws)
    sent = clients.ssm.send_command

    def second_batch_refused(**request):
        if clients.ssm.sent:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "SendCommand")
        return sent(**request)

    clients.ssm.send_command = second_batch_refused
    said: list[str] = []
    with pytest.raises(ClientError, match="Rate exceeded"):
        run(clients, settings, new_job(settings, "trainers", COMMAND, nodes=60), say=said.append, clock=FakeClock())

    group = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    assert group["DesiredCapacity"] == 2
    assert "lowering gpu-cloud-vision-train-trainers back from 60 to 2 nodes: the job did not start" in said
    assert clients.ssm.cancelled == [clients.ssm.sent[0]["CommandId"]]


def test_a_group_that_never_reaches_n_nodes_is_lowered_back(aws):
    class NeverInService:
        def __init__(self, client):
            self.client = client

        def describe_auto_scaling_groups(self, **request):
            answer = self.client.describe_auto_scaling_groups(**request)
            for group in answer["AutoScalingGroups"]:
                group["Instances"] = [dict(instance, LifecycleState="Pending") for instance in group["Instances"]]
            return answer

        def __getattr__(self, name):
            return getattr(self.client, name)

    clients = clients_with(aws)
    clients.autoscaling = NeverInService(clients.autoscaling)
    with pytest.raises(JobError, match="did not reach 3 nodes in service within 60 s"):
        run(clients, SETTINGS, new_job(SETTINGS, "trainers", COMMAND, nodes=3), say=lambda line: None,
            clock=FakeClock(), node_timeout=60)

    group = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    assert group["DesiredCapacity"] == 1 and clients.ssm.sent == []


def test_nodes_beyond_the_group_are_refused_before_any_call():
    with pytest.raises(JobError, match=r"--nodes 5 is above group trainers's maxSize 4"):
        new_job(SETTINGS, "trainers", COMMAND, nodes=5)
    notebooks = load_stack_file(STACKS / "Pulumi.notebooks.yaml")
    group = notebooks.config.groups[0]
    if group.max_size > 1:
        with pytest.raises(JobError, match="is not multiNode"):
            new_job(notebooks, group.name, COMMAND, nodes=2)
    with pytest.raises(JobError, match="no command"):
        new_job(SETTINGS, "trainers", [], nodes=1)


def replace_one_node(session, during: dict) -> Callable[[str, str, int], tuple[str, int]]:
    """Statuses for a job whose first attempt loses a node (Auto Scaling replaces it) at the
    first poll and whose later attempts succeed."""

    def status(command, instance, calls):
        if "first" not in during:
            during["first"] = command
        if command == during["first"]:
            if calls == 1:
                during["lost"] = instance
                session.client("autoscaling").terminate_instance_in_auto_scaling_group(
                    InstanceId=instance, ShouldDecrementDesiredCapacity=during.get("decrement", False))
            return "InProgress", -1
        return "Success", 0

    return status


@pytest.mark.access_calls("person:jobRunner", "run")
def test_a_replaced_node_resumes_the_job_on_the_new_set_with_the_next_attempt(aws):
    during: dict = {}
    clients = clients_with(aws, replace_one_node(aws, during))
    said: list[str] = []

    outcome = run(clients, SETTINGS, new_job(SETTINGS, "trainers", COMMAND, nodes=2, job_id="trainers-20261125190000-0001"),
                  say=said.append, clock=FakeClock())

    launches = [request for request in clients.ssm.sent if request["Parameters"]["action"] == ["launch"]]
    assert [request["Parameters"]["attempt"] for request in launches] == [["0"], ["1"]]
    assert launches[0]["Parameters"]["checkpointUri"] == launches[1]["Parameters"]["checkpointUri"] == [
        "s3://example-vision-data/runs/vision-train/jobs/trainers-20261125190000-0001/"]
    assert during["lost"] not in launches[1]["InstanceIds"] and len(launches[1]["InstanceIds"]) == 2
    assert clients.ssm.cancelled == [during["first"]]
    [stopping] = [request for request in clients.ssm.sent if request["Parameters"]["action"] == ["launch-stop"]]
    assert stopping["InstanceIds"] == [instance for instance in launches[0]["InstanceIds"] if instance != during["lost"]]
    assert outcome.exit_code == 0 and outcome.stopped is None
    assert any(f"node {during['lost']}" in line and "left service during attempt 0" in line for line in said)


def test_a_node_whose_drain_stopped_the_job_resumes_it_even_when_every_command_ended_between_polls(aws):
    drained: dict[str, str] = {}

    def status(command, instance, calls):
        first = drained.setdefault("command", command) == command
        if not first:
            return ("Success", 0)
        # The drain stopped the job on one node (its launcher exits 75 after saving the checkpoint);
        # the other rank then failed on the broken rendezvous, all before `run` polled once.
        return ("Failed", 75) if drained.setdefault("instance", instance) == instance else ("Failed", 1)

    clients = clients_with(aws, status)
    outcome = run(clients, SETTINGS, new_job(SETTINGS, "trainers", COMMAND, nodes=2), say=lambda line: None, clock=FakeClock())

    launches = [request for request in clients.ssm.sent if request["Parameters"]["action"] == ["launch"]]
    assert [request["Parameters"]["attempt"] for request in launches] == [["0"], ["1"]]
    assert outcome.exit_code == 0 and outcome.stopped is None


def test_a_replaced_node_stops_the_job_without_a_write_prefix(aws):
    settings = SETTINGS.model_copy(update={"config": SETTINGS.config.model_copy(update={"data": None})})
    during: dict = {}
    clients = clients_with(aws, replace_one_node(aws, during))

    outcome = run(clients, settings, new_job(settings, "trainers", COMMAND, nodes=2), say=lambda line: None,
                  clock=FakeClock())

    assert outcome.exit_code == 1 and "no data.writePrefixes, so there is no checkpoint to resume from" in outcome.stopped
    assert [request["Parameters"]["action"] for request in clients.ssm.sent] == [["launch"], ["launch-stop"]]


def test_a_group_that_does_not_get_back_to_n_nodes_stops_the_job(aws):
    during: dict = {"decrement": True}  # the group shrinks instead of replacing the node
    clients = clients_with(aws, replace_one_node(aws, during))

    outcome = run(clients, SETTINGS, new_job(SETTINGS, "trainers", COMMAND, nodes=2), say=lambda line: None,
                  clock=FakeClock(), node_timeout=600)

    assert outcome.exit_code == 1
    assert "did not get back to 2 nodes in service within 600 s" in outcome.stopped
    assert [request["Parameters"]["attempt"] for request in clients.ssm.sent if "attempt" in request["Parameters"]] == [["0"]]


def test_resumes_end_at_max_restarts(aws):
    def always_lose(command, instance, calls):
        if calls == 1:
            aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
                InstanceId=instance, ShouldDecrementDesiredCapacity=False)
        return "InProgress", -1

    clients = clients_with(aws, always_lose)
    outcome = run(clients, SETTINGS, new_job(SETTINGS, "trainers", COMMAND, nodes=1), say=lambda line: None,
                  clock=FakeClock(), max_restarts=2)

    assert [request["Parameters"]["attempt"] for request in clients.ssm.sent if "attempt" in request["Parameters"]] == [
        ["0"], ["1"], ["2"]]
    assert "after 2 resumes (--max-restarts)" in outcome.stopped


@pytest.mark.access_calls("person:jobRunner", "logs")
def test_logs_print_each_node_s_output_labelled_and_follow_until_the_end(aws):
    clients = clients_with(aws)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2, job_id="trainers-20261125190000-beef")
    run(clients, SETTINGS, job, say=lambda line: None, clock=FakeClock())
    attempt = job.attempts[0]
    log = aws.client("logs")
    group = job_log_group_name(SETTINGS.name_base)

    def write(node, text, at):
        stream = f"{attempt.command_of(node.instance_id)}/{node.instance_id}/launch/stdout"
        if stream not in {item["logStreamName"] for item in log.describe_log_streams(logGroupName=group)["logStreams"]}:
            log.create_log_stream(logGroupName=group, logStreamName=stream)
        log.put_log_events(logGroupName=group, logStreamName=stream, logEvents=[{"timestamp": at, "message": text}])

    now = int(time.time() * 1000)  # CloudWatch Logs refuses events older than 14 days
    write(attempt.nodes[0], "step 1 loss 2.31", now)
    states = iter(["InProgress", "Success"])  # the command runs on for one more poll after the second line
    running = {"status": "InProgress"}
    list_commands = clients.ssm.client.list_commands

    def scripted_list_commands(**request):
        stood_in("ssm", "ListCommands", request)
        answer = list_commands(**request)
        answer["Commands"][0]["Status"] = running["status"]
        return answer

    clients.ssm.list_commands = scripted_list_commands

    def later():
        if not running.get("written"):
            write(attempt.nodes[1], "step 1 loss 2.29", now + 1000)
            running["written"] = True
        running["status"] = next(states)

    printed: list[str] = []
    logs(clients, SETTINGS, job.job_id, follow=True, say=printed.append, clock=FakeClock(on_sleep=later))

    first, second = attempt.nodes
    assert printed == [f"[attempt 0 node 0 {first.private_ip} stdout] step 1 loss 2.31",
                       f"[attempt 0 node 1 {second.private_ip} stdout] step 1 loss 2.29"]


@pytest.mark.access_calls("person:jobRunner", "stop")
def test_stop_cancels_the_last_attempt_and_stops_its_processes(aws):
    clients = clients_with(aws, lambda command, instance, calls: ("InProgress", -1) if calls == 1 else ("Success", 0))
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=1, job_id="trainers-20261125190000-cafe")
    run(clients, SETTINGS, job, say=lambda line: None, clock=FakeClock())
    clients.ssm.status = lambda command, instance, calls: ("InProgress", -1)
    said: list[str] = []

    stop(clients, SETTINGS, job.job_id, say=said.append)

    assert clients.ssm.cancelled == list(job.attempts[0].commands)
    stopping = clients.ssm.sent[-1]
    assert stopping["Parameters"] == {"action": ["launch-stop"], "job": [job.job_id]}
    assert stopping["InstanceIds"] == [job.attempts[0].nodes[0].instance_id]
    assert said and "launch-stop sent to" in said[0]


@pytest.mark.parametrize("command", [stop, logs])
def test_an_unknown_job_is_one_clear_error(aws, command):
    with pytest.raises(JobError, match=r"^no job trainers-x in stack vision-train \(nothing at s3://"):
        command(clients_with(aws), SETTINGS, "trainers-x")


@pytest.mark.parametrize("command", [stop, logs])
def test_on_an_undeployed_stack_logs_and_stop_name_the_bucket_and_say_to_deploy_first(command):
    with moto_account(REGION) as account:
        with pytest.raises(JobError, match=r"^no job trainers-x in stack vision-train: its bucket example-vision-data "
                                           r"\(gpu-cloud:data.bucket\) does not exist: create it and deploy the stack "
                                           r"first \(pulumi up\), then `gpucloud run`$"):
            command(Clients.of(account.session), SETTINGS, "trainers-x")


def test_logs_of_a_job_with_no_output_yet_say_so(aws):
    clients = clients_with(aws)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=1, job_id="trainers-20261125190000-d00d")
    run(clients, SETTINGS, job, say=lambda line: None, clock=FakeClock())
    printed: list[str] = []

    logs(clients, SETTINGS, job.job_id, say=printed.append)

    assert printed == [f"job {job.job_id}: no output yet in log group {job_log_group_name(SETTINGS.name_base)}"]


def test_a_record_s3_refuses_to_show_says_it_may_be_missing_or_unreadable(aws):
    from botocore.exceptions import ClientError

    class Refusing:
        def get_object(self, **request):
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "GetObject")

    clients = clients_with(aws)
    clients.s3 = Refusing()
    with pytest.raises(JobError, match=r"^no job trainers-x in stack vision-train, or your credentials may not read "
                                       r"s3://example-vision-data/runs/vision-train/jobs/trainers-x/job.json"):
        stop(clients, SETTINGS, "trainers-x")


def test_nodes_are_ordered_by_address_as_numbers_not_text():
    class Ec2:
        def get_paginator(self, name):
            reservations = [{"Instances": [{"InstanceId": iid, "PrivateIpAddress": ip}]} for iid, ip in
                            (("i-a", "10.0.0.10"), ("i-b", "10.0.0.9"), ("i-c", "10.0.0.100"))]
            return type("Pages", (), {"paginate": lambda self, **request: [{"Reservations": reservations}]})()

    assert [node.private_ip for node in ordered_nodes(Ec2(), ["i-a", "i-b", "i-c"])] == ["10.0.0.9", "10.0.0.10", "10.0.0.100"]
