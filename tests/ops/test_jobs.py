"""`gpucloud run`, `logs` and `stop` against moto, the job supervised by the stack's state machine
as `run` starts it (executed by moto's Step Functions: test_job_supervisor.py's fixtures): the
capacity raise and the rendezvous parameters the job document gets, the exit code of the nodes'
statuses, a job on more than 50 nodes, the ways a job stops instead of resuming, following the
output, and stopping a job; and the refusals that need no supervision.

The nodes' SSM Agents are scripted (gpucloud.testing.run_command `Agents`): each test says what
every invocation answers; CancelCommand, which moto lacks, is recorded there."""

from __future__ import annotations

import base64
import json
import time

import pytest

from gpucloud.config import load_stack_file
from gpucloud.naming import job_log_group_name
from gpucloud.ops.job_control import logs, stop
from gpucloud.ops.jobs import Clients, Clock, Job, JobError, new_job
from gpucloud.ops.nodes import ordered_nodes
from gpucloud.ops.supervised_jobs import Execution, outcome, start
from gpucloud.testing import moto_account
from access_recording import stood_in
from support import STACKS
from test_job_supervisor import agents, await_attempt_record, aws, launches, replace_first_node  # noqa: F401 (fixtures)

REGION = "us-east-1"
SETTINGS = load_stack_file(STACKS / "Pulumi.vision-train.yaml")
GROUP = "gpu-cloud-vision-train-trainers"
BUCKET = "example-vision-data"
COMMAND = ["torchrun", "--nnodes", "$NNODES", "--rdzv-backend", "c10d", "train.py", "--lr", "3e-4"]


def ended(clients: Clients, arn: str, timeout: float = 60.0) -> Execution:
    """The execution once it has ended, read by the test's own calls (not the job commands', so that
    what a test measures of `run`, `logs` or `stop` stays theirs)."""
    deadline = time.monotonic() + timeout
    while (answer := clients.states.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, f"{arn} still running after {timeout} s"
        time.sleep(0.05)
    return Execution(answer["status"], json.loads(answer["output"]) if answer.get("output") else None,
                     answer.get("error"), answer.get("cause"))


def started(session, job: Job, settings=SETTINGS, **options) -> str:
    """The job started as `run` starts it (its record, then its supervision), without the preflight."""
    return start(Clients.of(session), settings, job, poll=0, **{"preflight": "off", **options})


def finished(session, job: Job, settings=SETTINGS, **options):
    """The job's supervision, once it ended."""
    return ended(Clients.of(session), started(session, job, settings, **options))


def private_ips(session, instance_ids) -> list[str]:
    reservations = session.client("ec2").describe_instances(InstanceIds=instance_ids)["Reservations"]
    found = {instance["InstanceId"]: instance["PrivateIpAddress"] for reservation in reservations
             for instance in reservation["Instances"]}
    return [found[instance] for instance in instance_ids]


def made(agents, operation: str) -> list[dict]:
    return [params for _, name, params in agents.made if name == operation]


@pytest.mark.access_calls("person:jobRunner", "run")
def test_run_raises_the_group_and_sends_the_rendezvous_in_address_order(aws, agents):
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=3, gpus_per_node=8, job_id="trainers-20261125190000-ab12")

    execution = finished(aws, job)

    assert execution.status == "SUCCEEDED", execution.cause
    group = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    assert group["DesiredCapacity"] == 3
    assert made(agents, "SetDesiredCapacity") == [
        {"AutoScalingGroupName": GROUP, "DesiredCapacity": 3, "HonorCooldown": False}], "no wait for the cooldown"
    [sent] = launches(aws)
    parameters = {name: value for name, [value] in sent["Parameters"].items()}
    assert parameters["nodes"] == ",".join(private_ips(aws, sent["InstanceIds"])), "rank order: the first is MASTER_ADDR"
    assert parameters | {"commandB64": None, "nodes": None} == {
        "action": "launch", "job": "trainers-20261125190000-ab12", "nodes": None, "port": "29500",
        "gpusPerNode": "8", "image": "", "attempt": "0", "commandB64": None,
        "checkpointUri": "s3://example-vision-data/runs/vision-train/jobs/trainers-20261125190000-ab12/"}
    assert json.loads(base64.b64decode(parameters["commandB64"])) == COMMAND
    [send] = [params for params in made(agents, "SendCommand") if params["Parameters"]["action"] == ["launch"]]
    assert send["DocumentName"] == "gpu-cloud-vision-train-run" and send["TimeoutSeconds"] == 600
    assert send["CloudWatchOutputConfig"] == {"CloudWatchLogGroupName": "/gpu-cloud/vision-train/jobs",
                                              "CloudWatchOutputEnabled": True}
    result = outcome(job, execution)
    assert [(node.rank, node.node.instance_id, node.status, node.exit_code) for node in result.results] == [
        (rank, instance, "Success", 0) for rank, instance in enumerate(sent["InstanceIds"])]
    assert result.exit_code == 0 and result.stopped is None
    record = json.loads(aws.client("s3").get_object(
        Bucket=BUCKET, Key="runs/vision-train/jobs/trainers-20261125190000-ab12/job.json")["Body"].read())
    assert record["command"] == COMMAND
    attempt = json.loads(aws.client("s3").get_object(
        Bucket=BUCKET, Key="runs/vision-train/jobs/trainers-20261125190000-ab12/attempts/0.json")["Body"].read())
    assert attempt["attempt"] == 0 and attempt["instanceIds"] == sent["InstanceIds"]


def test_a_node_exit_status_is_reported_and_becomes_the_exit_code(aws, agents):
    failing: dict[str, str] = {}

    def status(command, instance, calls):
        failing.setdefault("instance", instance)
        return ("Failed", 3) if instance == failing["instance"] else ("Success", 0)

    agents.status = status
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    result = outcome(job, finished(aws, job))

    assert sorted((node.status, node.exit_code) for node in result.results) == [("Failed", 3), ("Success", 0)]
    assert result.exit_code == 3


@pytest.mark.parametrize("status", [("Cancelled", -1), ("TimedOut", -1)])
def test_a_node_whose_command_ended_without_an_exit_status_has_none_and_the_job_exits_1(aws, agents, status):
    failing: dict[str, str] = {}
    agents.status = lambda command, instance, calls: status if failing.setdefault("i", instance) == instance else ("Success", 0)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    execution = finished(aws, job)

    assert execution.status == "FAILED" and execution.error == "failed"
    result = outcome(job, execution)
    assert sorted(node.exit_code for node in result.results if node.exit_code is not None) == [0]
    assert result.exit_code == 1


def test_an_invocation_ssm_has_not_made_yet_is_read_again_as_pending(aws, agents):
    from gpucloud.testing.run_command import NOT_YET

    agents.status = lambda command, instance, calls: (NOT_YET, -1) if calls <= 2 else ("Success", 0)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    execution = finished(aws, job)

    assert execution.status == "SUCCEEDED", execution.cause
    assert len(launches(aws)) == 1 and outcome(job, execution).exit_code == 0
    assert all(calls == 3 for calls in agents.calls.values()), "read until the agent had it"


def test_a_job_that_succeeded_everywhere_ends_though_a_node_left_service_since(aws, agents):
    """A node whose command succeeded and that the group let go before the next poll (a scale-in
    once the job was done) is no lost node: the job is not sent again."""
    gone: dict[str, str] = {}

    def status(command, instance, calls):
        if calls == 1:
            if not gone:  # its command ends, and the node leaves, before the supervisor's next poll
                gone["instance"] = instance
                aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
                    InstanceId=instance, ShouldDecrementDesiredCapacity=False)
            return "InProgress", -1
        return "Success", 0

    agents.status = status
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    execution = finished(aws, job)

    assert execution.status == "SUCCEEDED", execution.cause
    assert len(launches(aws)) == 1 and outcome(job, execution).exit_code == 0


def large_group(session, nodes: int):
    """The trainers group grown to `nodes` in service, and stack settings whose trainers allow that many."""
    session.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName=GROUP, MaxSize=nodes, DesiredCapacity=nodes)
    groups = [group.model_copy(update={"max_size": nodes}) if group.name == "trainers" else group
              for group in SETTINGS.config.groups]
    return SETTINGS.model_copy(update={"config": SETTINGS.config.model_copy(update={"groups": groups})})


def test_stop_of_a_job_on_more_than_50_nodes_stops_each_of_its_commands_50_instances_a_command(aws, agents):
    settings = large_group(aws, 60)
    agents.status = lambda command, instance, calls: ("InProgress", -1)
    job = new_job(settings, "trainers", COMMAND, nodes=60, job_id="trainers-20261125190000-0060")
    arn = started(aws, job, settings)
    deadline = time.monotonic() + 30
    while len(launches(aws)) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    await_attempt_record(aws, job)

    stop(Clients.of(aws), settings, job.job_id, say=lambda line: None)

    first, second = launches(aws)
    assert sorted(agents.cancelled) == sorted([first["CommandId"], second["CommandId"]])
    stops = [command for command in aws.client("ssm").list_commands()["Commands"]
             if command["Parameters"].get("action") == ["launch-stop"]]
    assert sorted(len(command["InstanceIds"]) for command in stops) == [10, 50]
    ended(Clients.of(aws), arn)


def test_a_refused_batch_cancels_the_batches_sent_and_ends_the_job_with_the_reason(aws, agents, monkeypatch):
    from moto.core.exceptions import JsonRESTError
    from moto.ssm.models import SimpleSystemManagerBackend

    settings = large_group(aws, 60)
    sending = SimpleSystemManagerBackend.send_command  # the agents' own, inside the supervisor's block
    sent: list[str] = []

    def second_batch_refused(backend, *arguments, **request):
        # the Map's iterations send at once: the batch is told by its content, not by the order of the sends
        if len(request["instance_ids"]) < 50:
            raise JsonRESTError("ThrottlingException", "Rate exceeded")
        command = sending(backend, *arguments, **request)
        sent.append(command.command_id)
        return command

    monkeypatch.setattr(SimpleSystemManagerBackend, "send_command", second_batch_refused)
    agents.status = lambda command, instance, calls: ("InProgress", -1)
    job = new_job(settings, "trainers", COMMAND, nodes=60)

    execution = finished(aws, job, settings)

    assert execution.status == "FAILED" and execution.error == "error"
    assert "Run Command refused a batch of attempt 0 and the batches already sent were cancelled" in execution.cause
    assert "Rate exceeded" in execution.cause
    assert agents.cancelled == sent and len(sent) == 1


def sent_as_the_supervisor_sends(session, job: Job, instance_ids: list[str]) -> dict[str, list[str]]:
    """An attempt's commands as the supervisor sends them (one per 50 nodes, its comment), without
    a record: what `stop` finds on a stack without a write prefix."""
    commands = {}
    for start_at in range(0, len(instance_ids), 50):
        batch = instance_ids[start_at:start_at + 50]
        sent = session.client("ssm").send_command(
            InstanceIds=batch, DocumentName="gpu-cloud-vision-train-run", Comment=f"gpucloud job {job.job_id} attempt 0",
            Parameters=job.parameters(0, ordered_nodes(session.client("ec2"), instance_ids)))
        commands[sent["Command"]["CommandId"]] = batch
    return commands


@pytest.mark.access_calls("person:jobRunner", "stop")
def test_without_a_record_a_job_on_more_than_50_nodes_is_found_again_from_both_its_commands(aws, agents):
    grown = large_group(aws, 60)
    settings = grown.model_copy(update={"config": grown.config.model_copy(update={"data": None})})
    agents.status = lambda command, instance, calls: ("InProgress", -1)
    job = new_job(settings, "trainers", COMMAND, nodes=60, job_id="trainers-20261125190000-0061")
    group = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    instance_ids = [instance["InstanceId"] for instance in group["Instances"]]
    commands = sent_as_the_supervisor_sends(aws, job, instance_ids)

    found = stop(Clients.of(aws), settings, job.job_id, say=lambda line: None)

    assert found.nodes == 60 and [attempt.attempt for attempt in found.attempts] == [0]
    assert found.attempts[0].commands == commands
    assert sorted(agents.cancelled) == sorted(commands)


def test_a_record_written_before_batches_still_reads():
    record = {"job_id": "trainers-x", "stack": "vision-train", "group": "trainers", "group_name": GROUP, "nodes": 1,
              "command": ["train"], "attempts": [{"attempt": 0, "command_id": "c-1",
                                                  "nodes": [{"instance_id": "i-1", "private_ip": "10.0.0.1"}]}]}
    [attempt] = Job.from_json(json.dumps(record)).attempts
    assert attempt.commands == {"c-1": ["i-1"]} and attempt.command_of("i-1") == "c-1"


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


@pytest.mark.access_calls("person:jobRunner", "run")
def test_a_replaced_node_resumes_the_job_on_the_new_set_with_the_next_attempt(aws, agents):
    during: dict = {}
    agents.status = replace_first_node(aws, during)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2, job_id="trainers-20261125190000-0001")

    execution = finished(aws, job)

    first, second = launches(aws)
    assert [first["Parameters"]["attempt"], second["Parameters"]["attempt"]] == [["0"], ["1"]]
    assert first["Parameters"]["checkpointUri"] == second["Parameters"]["checkpointUri"] == [
        "s3://example-vision-data/runs/vision-train/jobs/trainers-20261125190000-0001/"]
    assert during["lost"] not in second["InstanceIds"] and len(second["InstanceIds"]) == 2
    assert agents.cancelled == [first["CommandId"]]
    [stopping] = [command for command in aws.client("ssm").list_commands()["Commands"]
                  if command["Parameters"].get("action") == ["launch-stop"]]
    assert stopping["InstanceIds"] == [instance for instance in first["InstanceIds"] if instance != during["lost"]]
    assert outcome(job, execution).exit_code == 0


def test_a_node_whose_drain_stopped_the_job_resumes_it_even_when_every_command_ended_between_polls(aws, agents):
    drained: dict[str, str] = {}

    def status(command, instance, calls):
        if drained.setdefault("command", command) != command:
            return ("Success", 0)
        # The drain stopped the job on one node (its launcher exits 75 after saving the checkpoint);
        # the other rank then failed on the broken rendezvous, all before the supervisor polled once.
        return ("Failed", 75) if drained.setdefault("instance", instance) == instance else ("Failed", 1)

    agents.status = status
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    execution = finished(aws, job)

    assert [command["Parameters"]["attempt"] for command in launches(aws)] == [["0"], ["1"]]
    assert execution.status == "SUCCEEDED" and outcome(job, execution).exit_code == 0


def test_a_replaced_node_stops_the_job_without_a_write_prefix(aws, agents):
    settings = SETTINGS.model_copy(update={"config": SETTINGS.config.model_copy(update={"data": None})})
    agents.status = replace_first_node(aws, {})
    job = new_job(settings, "trainers", COMMAND, nodes=2)

    execution = finished(aws, job, settings)

    assert execution.status == "FAILED" and execution.error == "no-checkpoint"
    result = outcome(job, execution)
    assert result.exit_code == 1 and "no data.writePrefixes, so there is no checkpoint to resume from" in result.stopped
    assert [command["Parameters"]["action"] for command in aws.client("ssm").list_commands()["Commands"]] == [
        ["launch"], ["launch-stop"]]


def test_a_group_that_does_not_get_back_to_n_nodes_stops_the_job(aws, agents):
    during: dict = {}
    lose = replace_first_node(aws, during)

    def shrink(command, instance, calls):
        if "lost" not in during:  # the group shrinks instead of replacing the node
            during["lost"] = instance
            aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
                InstanceId=instance, ShouldDecrementDesiredCapacity=True)
        return lose(command, instance, calls)

    agents.status = shrink
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    execution = finished(aws, job, node_timeout=0)

    assert execution.status == "FAILED" and execution.error == "no-nodes"
    assert "did not reach 2 nodes in service within 0 s (attempt 1)" in outcome(job, execution).stopped
    assert [command["Parameters"]["attempt"] for command in launches(aws)] == [["0"]]


class CommandsListedAs:
    """The SSM client, with ListCommands answered by `list_commands` (the job's command status
    scripted); the calls it answers itself are still the job commands' (access_recording.stood_in)."""

    stands_in_for_aws = True

    def __init__(self, client, list_commands):
        self.client = client
        self.list_commands = list_commands

    def __getattr__(self, name):
        return getattr(self.client, name)


@pytest.mark.access_calls("person:jobRunner", "logs")
def test_logs_print_each_node_s_output_labelled_and_follow_until_the_end(aws, agents):
    clients = Clients.of(aws)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2, job_id="trainers-20261125190000-beef")
    ended(clients, started(aws, job))
    [sent] = launches(aws)
    nodes = private_ips(aws, sent["InstanceIds"])
    log = aws.client("logs")
    group = job_log_group_name(SETTINGS.name_base)

    def write(rank, text, at):
        stream = f"{sent['CommandId']}/{sent['InstanceIds'][rank]}/launch/stdout"
        if stream not in {item["logStreamName"] for item in log.describe_log_streams(logGroupName=group)["logStreams"]}:
            log.create_log_stream(logGroupName=group, logStreamName=stream)
        log.put_log_events(logGroupName=group, logStreamName=stream, logEvents=[{"timestamp": at, "message": text}])

    now = int(time.time() * 1000)  # CloudWatch Logs refuses events older than 14 days
    write(0, "step 1 loss 2.31", now)
    states = iter(["InProgress", "Success"])  # the command runs on for one more poll after the second line
    running = {"status": "InProgress"}
    list_commands = clients.ssm.list_commands

    def scripted_list_commands(**request):
        stood_in("ssm", "ListCommands", request)
        answer = list_commands(**request)
        answer["Commands"][0]["Status"] = running["status"]
        return answer

    clients.ssm = CommandsListedAs(clients.ssm, scripted_list_commands)

    def later(seconds):
        if not running.get("written"):
            write(1, "step 1 loss 2.29", now + 1000)
            running["written"] = True
        running["status"] = next(states)

    printed: list[str] = []
    logs(clients, SETTINGS, job.job_id, follow=True, say=printed.append, clock=Clock(now=time.monotonic, sleep=later))

    assert printed == [f"[attempt 0 node 0 {nodes[0]} stdout] step 1 loss 2.31",
                       f"[attempt 0 node 1 {nodes[1]} stdout] step 1 loss 2.29"]


@pytest.mark.access_calls("person:jobRunner", "stop")
def test_stop_cancels_the_last_attempt_and_stops_its_processes(aws, agents):
    agents.status = lambda command, instance, calls: ("InProgress", -1)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=1, job_id="trainers-20261125190000-cafe")
    arn = started(aws, job)
    deadline = time.monotonic() + 30
    while not launches(aws):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    await_attempt_record(aws, job)
    said: list[str] = []

    stop(Clients.of(aws), SETTINGS, job.job_id, say=said.append)

    [sent] = launches(aws)
    assert agents.cancelled == [sent["CommandId"]]
    [stopping] = [command for command in aws.client("ssm").list_commands()["Commands"]
                  if command["Parameters"].get("action") == ["launch-stop"]]
    assert stopping["Parameters"] == {"action": ["launch-stop"], "job": [job.job_id]}
    assert stopping["InstanceIds"] == sent["InstanceIds"]
    assert said and "launch-stop sent to" in said[-1]
    ended(Clients.of(aws), arn)


@pytest.mark.parametrize("command", [stop, logs])
def test_an_unknown_job_is_one_clear_error(aws, command):
    with pytest.raises(JobError, match=r"^no job trainers-x in stack vision-train \(nothing at s3://"):
        command(Clients.of(aws), SETTINGS, "trainers-x")


@pytest.mark.parametrize("command", [stop, logs])
def test_on_an_undeployed_stack_logs_and_stop_name_the_bucket_and_say_to_deploy_first(command):
    with moto_account(REGION) as account:
        with pytest.raises(JobError, match=r"^no job trainers-x in stack vision-train: its bucket example-vision-data "
                                           r"\(gpu-cloud:data.bucket\) does not exist: create it and deploy the stack "
                                           r"first \(pulumi up\), then `gpucloud run`$"):
            command(Clients.of(account.session), SETTINGS, "trainers-x")


def test_logs_of_a_job_with_no_output_yet_say_so(aws):
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=1, job_id="trainers-20261125190000-d00d")
    finished(aws, job)
    printed: list[str] = []

    logs(Clients.of(aws), SETTINGS, job.job_id, say=printed.append)

    assert printed == [f"job {job.job_id}: no output yet in log group {job_log_group_name(SETTINGS.name_base)}"]


def test_a_record_s3_refuses_to_show_says_it_may_be_missing_or_unreadable(aws):
    from botocore.exceptions import ClientError

    class Refusing:
        def get_object(self, **request):
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "GetObject")

    clients = Clients.of(aws)
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
