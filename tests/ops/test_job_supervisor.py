"""The job supervisor's definition EXECUTED by moto's Step Functions interpreter against moto's
Auto Scaling, EC2, SSM, S3 and SNS: a job that succeeds, one whose node is replaced mid-job
(resumed from its checkpoint on the new set), one that spends its retry budget (stopped, the topic
told), one whose user process is killed after it started (the job goes on), `jobs` and `stop`.

What is simulated, and only that (gpucloud.testing.run_command): the nodes' SSM Agents, whose
invocation statuses come from each test's script, and CancelCommand, which moto lacks. A node
"leaves" as Auto Scaling makes it leave: TerminateInstanceInAutoScalingGroup, after which moto's
group launches its replacement."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable

import pytest

from gpucloud.config import load_stack_file
from gpucloud.documents.job_supervisor import supervisor_definition_content
from gpucloud.documents.jobs import jobs_prefix
from gpucloud.naming import job_document_name, job_log_group_name, job_supervisor_name
from gpucloud.ops.job_control import stop
from gpucloud.ops.job_records import Clients, Clock, new_job
from gpucloud.ops.supervised_jobs import attempts, describe, follow, jobs, outcome, start
from gpucloud.testing import moto_account
from gpucloud.testing.run_command import Agents, executing_state_machines
from support import STACKS, job_resources

REGION = "us-east-1"
SETTINGS = load_stack_file(STACKS / "Pulumi.vision-train.yaml")
GROUP = "gpu-cloud-vision-train-trainers"
BUCKET = "example-vision-data"
COMMAND = ["torchrun", "--nnodes", "$NNODES", "train.py"]
SUPERVISOR = pytest.mark.access_calls("service:states.amazonaws.com", "jobSupervisor", settings=SETTINGS,
                                      principal="arn:${partition}:iam::${account}:role/gpu-cloud-${nameBase}-jobs-role")
"""The supervisor's own calls, its tasks' on moto, recorded for the plan's access check as its role's."""


@pytest.fixture
def agents():
    return Agents()


@pytest.fixture
def aws(agents):
    """What a deployed vision-train gives a job: the group, the data bucket, the job document and
    log group, the alerts topic, and the supervisor's state machine built from the stack's values."""
    with moto_account(REGION) as account, executing_state_machines(agents):
        session = account.session
        job_resources(session, SETTINGS, GROUP, BUCKET)
        key = session.client("kms").create_key()["KeyMetadata"]["Arn"]  # the project key encrypts the topic
        topic = session.client("sns").create_topic(Name="gpu-cloud-vision-train-alerts",
                                                   Attributes={"KmsMasterKeyId": key})["TopicArn"]
        definition = supervisor_definition_content(
            document_name=job_document_name(SETTINGS.name_base), log_group_name=job_log_group_name(SETTINGS.name_base),
            topic_arn=topic, bucket=BUCKET, jobs_prefix=jobs_prefix(SETTINGS.config.data.write_prefixes))
        machine = session.client("stepfunctions").create_state_machine(
            name=job_supervisor_name(SETTINGS.name_base), definition=definition,
            roleArn=f"arn:aws:iam::{account.account_id}:role/gpu-cloud-vision-train-jobs-role")["stateMachineArn"]
        session.topic = topic
        yield session
        states = session.client("stepfunctions")
        running = still_running(states, machine)
        for item in running:
            states.stop_execution(executionArn=item["executionArn"])
        assert [item["name"] for item in running] == [], (
            "an execution outlived its test: its thread would have polled on through the tests after it")


def still_running(states, machine: str, grace_s: float = 10.0) -> list[dict]:
    """The machine's executions still RUNNING once those a test stopped have ended: moto's
    StopExecution only flags the execution, and its thread ends it a moment later (ABORTED, or
    FAILED when it was inside a Map iteration)."""
    deadline = time.monotonic() + grace_s
    while True:
        running = states.list_executions(stateMachineArn=machine, statusFilter="RUNNING")["executions"]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


def ended(clients: Clients, arn: str, timeout: float = 60.0):
    """The execution once it has ended (moto runs it on a thread of its own); read by the test,
    not through the job commands, so that the person's measured calls stay theirs."""
    deadline = time.monotonic() + timeout
    while clients.states.describe_execution(executionArn=arn)["status"] == "RUNNING":
        assert time.monotonic() < deadline, f"{arn} still running after {timeout} s"
        time.sleep(0.05)
    return describe(clients, arn)


def denied_to_the_supervisor_role(session, made: list[tuple[str, str, dict]]) -> list[str]:
    """Each call the executions made that the supervisor's role policy and the project's key policy,
    built from the same stack values, would not allow (the project's evaluator,
    gpucloud.policy.access). A publish to the alerts topic, which the key encrypts, also asks KMS
    for a data key through SNS with the role's credentials (SNS developer guide, "Configuring AWS
    KMS permissions")."""
    from gpucloud.documents.job_supervisor_access import supervisor_role_policy
    from gpucloud.documents.keys import key_policy
    from gpucloud.naming import instance_role_name, job_supervisor_role_name
    from gpucloud.policy.access import Call, Documents, evaluate
    from gpucloud.testing.iam_actions import IamCall, iam_calls, stack_tag_context

    account, base = "123456789012", SETTINGS.name_base
    role = f"arn:aws:iam::{account}:role/{job_supervisor_role_name(base)}"
    key = f"arn:aws:kms:{REGION}:{account}:key/0000"
    policy = supervisor_role_policy(
        partition="aws", region=REGION, account_id=account, name_base=base, machine_name=job_supervisor_name(base),
        document_name=job_document_name(base), group_names=[GROUP], topic_arn=session.topic, key_arn=key,
        bucket=BUCKET, jobs_prefix=jobs_prefix(SETTINGS.config.data.write_prefixes))
    keys = key_policy("aws", account, REGION, [instance_role_name(base)],
                      topic_publisher_role_names=[job_supervisor_role_name(base)])
    documents = Documents(identity={role: [policy]}, resource=[(key, keys)], endpoints={}, account=account)

    def filled(text: str) -> str:
        for name, value in (("partition", "aws"), ("region", REGION), ("account", account),
                            ("autoScalingGroupId", "0000"), ("nameBase", base), ("keyArn", key)):
            text = text.replace("${" + name + "}", value)
        return text

    denied = []
    for service, operation, params in made:
        needs = iam_calls(service, operation, params)
        if (service, operation) == ("sns", "Publish"):
            needs += [IamCall(action, "${keyArn}", {"kms:ViaService": f"sns.{REGION}.amazonaws.com",
                                                    "kms:CallerAccount": "${account}"}, via="sns")
                      for action in ("kms:GenerateDataKey", "kms:Decrypt")]
        for needed in needs:
            resource = filled(needed.resource)
            context = {key_: filled(value) for key_, value in {
                **needed.context, **stack_tag_context(needed.action, needed.resource.replace(base, "${nameBase}"))}.items()}
            decision = evaluate(Call("service:jobSupervisor", role, needed.action, resource, context, None), documents)
            if not decision.allowed:
                denied.append(f"{needed.action} {resource}: {decision.reason}")
    return denied


def launches(session) -> list[dict]:
    """The job document's launch commands, in the order sent."""
    commands = session.client("ssm").list_commands()["Commands"]
    return [command for command in commands if command["Parameters"].get("action") == ["launch"]]


def await_attempt_record(session, job, timeout: float = 30.0) -> None:
    """Waits until the supervisor has recorded attempt 0 (after its launch), read with the test's
    own client, so that what the job commands read next does not depend on the machine's speed."""
    folder = job.checkpoint_uri.removeprefix(f"s3://{BUCKET}/") + "attempts/"
    deadline = time.monotonic() + timeout
    while not session.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=folder).get("Contents"):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def await_marker(session, job, timeout: float = 30.0) -> None:
    """Waits until the supervisor has written the job's marker (after its launch and record), which
    the node-left branch reads; a fixed sleep is too short on a loaded machine."""
    key = f"runs/vision-train/jobs/groups/{GROUP}/{job.job_id}.json"
    deadline = time.monotonic() + timeout
    while not session.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=key).get("Contents"):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def hold_the_first_command(agents) -> None:
    """The agents answer the first command sent as running for good, and every later one as done."""
    during: dict = {}
    agents.status = lambda command, instance, calls: (
        ("InProgress", -1) if during.setdefault("first", command) == command else ("Success", 0))


def notifications(session) -> list[tuple[str, str]]:
    """(subject, message) of everything published to the stack's topic."""
    from moto.sns import sns_backends

    topic = sns_backends["123456789012"][REGION].topics[session.topic]
    return [(subject, message) for _, message, subject, _, _ in topic.sent_notifications]


def detached(session, nodes: int = 2, **options) -> tuple[Clients, str, object]:
    """A job started as `run --detach` does; without the preflight unless a test asks for one."""
    clients = Clients.of(session)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=nodes)
    return clients, start(clients, SETTINGS, job, poll=0, **{"preflight": "off", **options}), job


@pytest.mark.access_calls("person:jobRunner", "run")
@SUPERVISOR
def test_a_detached_job_runs_on_n_nodes_and_its_end_goes_to_the_topic(aws):
    clients, arn, job = detached(aws, nodes=3)

    execution = ended(clients, arn)

    assert execution.status == "SUCCEEDED"
    [sent] = launches(aws)
    parameters = {name: value for name, [value] in sent["Parameters"].items()}
    addresses = {instance["InstanceId"]: instance["PrivateIpAddress"]
                 for reservation in aws.client("ec2").describe_instances(InstanceIds=sent["InstanceIds"])["Reservations"]
                 for instance in reservation["Instances"]}
    assert sorted(parameters["nodes"].split(",")) == sorted(addresses.values()) and len(addresses) == 3
    assert parameters | {"nodes": None, "commandB64": None} == {
        "action": "launch", "job": job.job_id, "nodes": None, "port": "29500", "gpusPerNode": "", "image": "",
        "attempt": "0", "commandB64": None,
        "checkpointUri": f"s3://{BUCKET}/runs/vision-train/jobs/{job.job_id}/"}
    assert json.loads(base64.b64decode(parameters["commandB64"])) == COMMAND
    assert sent["Comment"] == f"gpucloud job {job.job_id} attempt 0"
    group = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    assert group["DesiredCapacity"] == 3
    result = outcome(job, execution)
    assert result.exit_code == 0 and [node.status for node in result.results] == ["Success"] * 3
    [(subject, message)] = notifications(aws)
    assert subject == f"gpu-cloud job {job.job_id}: succeeded" and message.startswith(f"job {job.job_id} succeeded on attempt 0")


def replace_first_node(session, during: dict) -> Callable[[str, str, int], tuple[str, int]]:
    """Agents whose first attempt loses a node (Auto Scaling replaces it) at its first poll, and
    whose later commands succeed."""

    def status(command, instance, calls):
        first = during.setdefault("first", command)
        if command == first:
            if "lost" not in during:
                during["lost"] = instance
                session.client("autoscaling").terminate_instance_in_auto_scaling_group(
                    InstanceId=instance, ShouldDecrementDesiredCapacity=False)
            return "InProgress", -1
        return "Success", 0

    return status


@pytest.mark.access_calls("person:jobRunner", "run")
@SUPERVISOR
def test_a_node_replaced_mid_job_resumes_from_the_checkpoint_on_the_new_set(aws, agents):
    during: dict = {}
    agents.status = replace_first_node(aws, during)
    clients, arn, job = detached(aws)

    execution = ended(clients, arn)

    assert execution.status == "SUCCEEDED", execution.cause
    first, second = launches(aws)
    assert [first["Parameters"]["attempt"], second["Parameters"]["attempt"]] == [["0"], ["1"]]
    assert first["Parameters"]["checkpointUri"] == second["Parameters"]["checkpointUri"] == [
        f"s3://{BUCKET}/runs/vision-train/jobs/{job.job_id}/"]
    assert during["lost"] in first["InstanceIds"] and during["lost"] not in second["InstanceIds"]
    assert len(second["InstanceIds"]) == 2
    assert agents.cancelled == [first["CommandId"]]
    stops = [command for command in aws.client("ssm").list_commands()["Commands"]
             if command["Parameters"].get("action") == ["launch-stop"]]
    assert [command["InstanceIds"] for command in stops] == [[i for i in first["InstanceIds"] if i != during["lost"]]]
    follower = follow(clients, job, arn, say=lambda line: None, clock=Clock(sleep=lambda seconds: None))
    assert [attempt.attempt for attempt in follower.job.attempts] == [0, 1]
    assert {node.instance_id for node in follower.job.attempts[1].nodes} == set(second["InstanceIds"])
    assert follower.exit_code == 0
    assert {(service, operation) for service, operation, _ in agents.made} >= {
        ("autoscaling", "SetDesiredCapacity"), ("ssm", "SendCommand"), ("ssm", "CancelCommand"),
        ("ssm", "GetCommandInvocation"), ("s3", "PutObject"), ("s3", "DeleteObject"), ("sns", "Publish")}
    assert denied_to_the_supervisor_role(aws, agents.made) == []


def test_the_retry_budget_spent_stops_the_job_and_tells_the_topic(aws, agents):
    def always_lose(command, instance, calls):
        if calls == 1:
            aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
                InstanceId=instance, ShouldDecrementDesiredCapacity=False)
        return "InProgress", -1

    agents.status = always_lose
    clients, arn, job = detached(aws, nodes=1, max_restarts=1)

    execution = ended(clients, arn)

    assert execution.status == "FAILED" and execution.error == "out-of-retries"
    assert [command["Parameters"]["attempt"] for command in launches(aws)] == [["0"], ["1"]]
    [(subject, message)] = notifications(aws)
    assert subject == f"gpu-cloud job {job.job_id}: out-of-retries"
    assert "after 1 resumes (max restarts)" in message
    assert outcome(job, execution).exit_code == 1


def test_a_node_exit_status_fails_the_job_with_its_reason(aws, agents):
    agents.status = lambda command, instance, calls: ("Failed", 3)
    clients, arn, job = detached(aws, nodes=1)

    execution = ended(clients, arn)

    assert execution.status == "FAILED" and execution.error == "failed"
    assert outcome(job, execution).exit_code == 3
    [(subject, message)] = notifications(aws)
    assert subject.endswith(": failed") and '"code":3' in message


def test_the_job_goes_on_when_the_user_process_is_killed_after_it_started(aws, agents):
    agents.status = lambda command, instance, calls: ("InProgress", -1) if calls <= 5 else ("Success", 0)

    class Killed(BaseException):
        """The user's process ends: the laptop closes, the SSO session expires."""

    def kill(seconds):
        raise Killed

    clients, arn, job = detached(aws)
    with pytest.raises(Killed):
        follow(clients, job, arn, say=lambda line: None, clock=Clock(sleep=kill))
    del clients

    execution = ended(Clients.of(aws), arn)
    assert execution.status == "SUCCEEDED"
    assert [subject for subject, _ in notifications(aws)] == [f"gpu-cloud job {job.job_id}: succeeded"]


@pytest.mark.access_calls("person:jobRunner", "stop")
def test_jobs_lists_the_stack_s_jobs_and_stop_stops_the_supervision_and_the_commands(aws, agents):
    agents.status = lambda command, instance, calls: ("InProgress", -1)
    clients, arn, job = detached(aws)
    await_attempt_record(aws, job)
    [row] = jobs(clients, SETTINGS)
    assert (row["job"], row["state"], row["nodes"], row["attempts"]) == (job.job_id, "RUNNING", 2, 1)

    stop(clients, SETTINGS, job.job_id, say=lambda line: None)

    # AWS ends a stopped execution ABORTED; moto, stopping it inside a Map iteration, FAILED
    assert ended(clients, arn).status in ("ABORTED", "FAILED")
    assert agents.cancelled == [launches(aws)[0]["CommandId"]]


@pytest.mark.access_calls("person:jobRunner", "jobs")
def test_run_detach_prints_the_job_id_and_jobs_lists_it(aws, capsys):
    from gpucloud.cli import main

    assert main(["run", "--stack", "vision-train", "--group", "trainers", "--nodes", "2", "--detach", "--poll", "0",
                 "--", "python", "train.py"]) == 0
    job_id = capsys.readouterr().out.strip()
    clients = Clients.of(aws)
    arn = f"arn:aws:states:{REGION}:123456789012:execution:{job_supervisor_name(SETTINGS.name_base)}:{job_id}"
    assert ended(clients, arn).status == "SUCCEEDED"

    assert main(["jobs", "--stack", "vision-train"]) == 0
    [header, row] = capsys.readouterr().out.splitlines()
    assert header.split() == ["JOB", "STATE", "ATTEMPTS", "NODES", "STARTED"]
    assert row.split()[:4] == [job_id, "SUCCEEDED", "1", "2"]


@SUPERVISOR
def test_a_long_job_continues_in_a_new_execution_before_the_history_quota(aws, agents):
    """Two polls an execution: polls 1-2, 3-4, then 5, where the job ends."""
    agents.status = lambda command, instance, calls: ("InProgress", -1) if calls <= 4 else ("Success", 0)
    clients = Clients.of(aws)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)
    arn = start(clients, SETTINGS, job, poll=0, polls_per_execution=2)

    result = follow(clients, job, arn, say=lambda line: None, clock=Clock(sleep=lambda seconds: time.sleep(0.05)))

    assert result.exit_code == 0 and len(launches(aws)) == 1
    names = [item["name"] for item in clients.states.list_executions(stateMachineArn=arn.rsplit(":", 1)[0].replace(
        ":execution:", ":stateMachine:"))["executions"]]
    assert sorted(names) == sorted([job.job_id, f"{job.job_id}-g1", f"{job.job_id}-g2"])
    assert describe(clients, arn).output == {"continuedAs": arn + "-g1"}
    [row] = jobs(clients, SETTINGS)
    assert (row["job"], row["state"], row["supervisions"]) == (job.job_id, "SUCCEEDED", 3)
    assert denied_to_the_supervisor_role(aws, agents.made) == []


@SUPERVISOR
def test_a_node_leaving_after_the_supervision_died_continues_the_job_on_the_new_set(aws, agents):
    from moto.events.models import EventPattern
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    from gpucloud.documents.job_supervisor_continuation import node_left_pattern

    hold_the_first_command(agents)
    clients, arn, job = detached(aws)
    await_marker(aws, job)
    # The supervision dies as AWS fails an execution (past its history quota, say): stopped, FAILED.
    backend = stepfunctions_parser_backends["123456789012"][REGION]
    dead = backend.describe_execution(arn)
    dead.stop(stop_date=dead.start_date, error="States.Runtime", cause="simulated")
    ended(clients, arn)  # its worker ends it ABORTED
    dead.exec_status = ExecutionStatus.FAILED
    [first] = launches(aws)
    lost = first["InstanceIds"][0]
    aws.client("autoscaling").terminate_instance_in_auto_scaling_group(InstanceId=lost, ShouldDecrementDesiredCapacity=False)
    event = {"version": "0", "id": "1", "source": "aws.autoscaling", "account": "123456789012", "region": REGION,
             "time": "2026-11-28T20:00:00Z", "resources": [], "detail-type": "EC2 Instance Terminate Successful",
             "detail": {"AutoScalingGroupName": GROUP, "EC2InstanceId": lost}}
    assert EventPattern.load(json.dumps(node_left_pattern([GROUP]))).matches_event(event)  # moto's TestEventPattern is a stub

    # EventBridge's delivery to its target, as the rule's target would start it:
    machine = arn.rsplit(":", 1)[0].replace(":execution:", ":stateMachine:")
    started = clients.states.start_execution(stateMachineArn=machine, input=json.dumps(event))["executionArn"]
    assert ended(clients, started).status == "SUCCEEDED"

    continued = ended(clients, f"{arn}-r{lost}")
    assert continued.status == "SUCCEEDED", continued.cause
    resumed = json.loads(clients.states.describe_execution(executionArn=f"{arn}-r{lost}")["input"])
    assert (resumed["generation"], resumed["polls"]) == (0, 0), "the dead supervision's generation, its polls anew"
    first, second = launches(aws)
    assert [first["Parameters"]["attempt"], second["Parameters"]["attempt"]] == [["0"], ["1"]]
    assert lost not in second["InstanceIds"]
    assert agents.cancelled[0] == first["CommandId"]
    assert {("s3", "ListObjectsV2"), ("s3", "GetObject"), ("states", "DescribeExecution"), ("states", "StartExecution")} <= {
        (service, operation) for service, operation, _ in agents.made}
    assert denied_to_the_supervisor_role(aws, agents.made) == []


def test_the_preflight_step_sends_its_level_first_and_a_failing_node_the_breaker_keeps_stops_the_job(aws, agents):
    """The node fails its own checks; the decide step (the node code) names it; its replacement is
    held by the group's breaker (preflight-replace exits 1, `held`): the job stops before it starts."""
    from gpucloud.node.preflight_command import decision

    sent: dict[str, str] = {}

    def status(command, instance, calls):
        action = next(item for item in aws.client("ssm").list_commands(CommandId=command)["Commands"])["Parameters"]["action"][0]
        sent.setdefault(action, command)
        failing = action in ("preflight-full", "preflight-replace") and instance == min(during)
        return ("Failed", 1) if failing else ("Success", 0)

    def output(command, instance, parameters):
        if parameters["action"] == ["preflight-decide"]:
            return decision(parameters["nodes"][0], parameters["commandB64"][0])
        return "held\n" if parameters["action"] == ["preflight-replace"] else None

    during = {instance["InstanceId"] for group in aws.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[GROUP])["AutoScalingGroups"] for instance in group["Instances"]}
    agents.status, agents.output = status, output
    clients, arn, job = detached(aws, nodes=1, preflight="full")

    execution = ended(clients, arn)

    assert execution.status == "FAILED" and execution.error == "preflight-failed"
    assert "replacement breaker" in execution.cause
    assert list(sent) == ["preflight-full", "preflight-decide", "preflight-replace"] and launches(aws) == []
    [(subject, _)] = notifications(aws)
    assert subject.endswith(": preflight-failed")


def test_a_passing_preflight_lets_the_job_start(aws):
    clients, arn, job = detached(aws, preflight="quick")

    assert ended(clients, arn).status == "SUCCEEDED"
    actions = [command["Parameters"]["action"] for command in aws.client("ssm").list_commands()["Commands"]]
    assert sorted(actions) == [["launch"], ["preflight"]]


def test_run_follows_the_supervision_to_the_job_s_end_and_logs_read_its_attempts(aws, capsys):
    from gpucloud.cli import main
    from gpucloud.ops.job_control import logs

    assert main(["run", "--stack", "vision-train", "--group", "trainers", "--nodes", "1", "--poll", "0",
                 "--", "python", "train.py"]) == 0
    out = capsys.readouterr().out
    job_id = out.split()[1].rstrip(":")
    assert "supervised in AWS" in out and f"job {job_id} attempt 0: command" in out and ": Success, exit 0" in out

    clients = Clients.of(aws)
    [sent] = launches(aws)
    [instance] = sent["InstanceIds"]
    log = aws.client("logs")
    group = job_log_group_name(SETTINGS.name_base)
    stream = f"{sent['CommandId']}/{instance}/launch/stdout"
    log.create_log_stream(logGroupName=group, logStreamName=stream)
    log.put_log_events(logGroupName=group, logStreamName=stream,
                       logEvents=[{"timestamp": int(time.time() * 1000), "message": "step 1 loss 2.31"}])
    printed: list[str] = []
    logs(clients, SETTINGS, job_id, say=printed.append)
    assert len(printed) == 1 and printed[0].startswith("[attempt 0 node 0 ") and printed[0].endswith("stdout] step 1 loss 2.31")


def test_stop_after_a_resume_stops_the_last_attempt(aws, agents):
    during: dict = {}
    replace = replace_first_node(aws, during)
    agents.status = lambda command, instance, calls: (
        replace(command, instance, calls) if command == during.get("first", command) else ("InProgress", -1))
    clients, arn, job = detached(aws)
    deadline = time.monotonic() + 30
    while len(launches(aws)) < 2 or len(attempts(clients, job.checkpoint_uri)) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)

    stopped = stop(clients, SETTINGS, job.job_id, say=lambda line: None)

    first, second = launches(aws)
    assert [attempt.attempt for attempt in stopped.attempts] == [0, 1]
    assert agents.cancelled[-1] == second["CommandId"] and agents.cancelled.count(first["CommandId"]) == 1


@SUPERVISOR
def test_a_job_that_never_gets_its_nodes_gives_the_group_back_its_capacity(aws):
    from unittest import mock

    from moto.autoscaling.models import InstanceState

    made = InstanceState.__init__

    def stuck_at_the_health_gate(state, instance, lifecycle_state="InService", *arguments, **options):
        made(state, instance, "Pending:Wait", *arguments, **options)

    with mock.patch.object(InstanceState, "__init__", stuck_at_the_health_gate):
        clients, arn, job = detached(aws, nodes=3, node_timeout=0)
        execution = ended(clients, arn)

    assert execution.status == "FAILED" and execution.error == "no-nodes"
    group = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    assert group["DesiredCapacity"] == 1 and launches(aws) == []
    [(subject, _)] = notifications(aws)
    assert subject.endswith(": no-nodes")


def test_a_job_on_more_than_50_nodes_goes_out_50_instances_a_command(aws):
    groups = [group.model_copy(update={"max_size": 60}) if group.name == "trainers" else group
              for group in SETTINGS.config.groups]
    settings = SETTINGS.model_copy(update={"config": SETTINGS.config.model_copy(update={"groups": groups})})
    aws.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName=GROUP, MaxSize=60)
    clients = Clients.of(aws)
    job = new_job(settings, "trainers", COMMAND, nodes=60)

    execution = ended(clients, start(clients, settings, job, poll=0))

    assert execution.status == "SUCCEEDED", execution.cause
    sent = launches(aws)
    assert sorted(len(command["InstanceIds"]) for command in sent) == [10, 50]  # SendCommand takes at most 50
    assert len({instance for command in sent for instance in command["InstanceIds"]}) == 60
    [attempt] = attempts(clients, job.checkpoint_uri)
    assert sorted(len(instances) for instances in attempt.commands.values()) == [10, 50]


def test_the_preflight_defaults_to_quick_on_a_multinode_group_and_off_elsewhere(aws, capsys):
    """A multiNode group's job depends on the fabric between its nodes: without --preflight its
    supervision runs the quick preflight first; a one-node group's job skips it (issue 37)."""
    from gpucloud.cli import main
    from gpucloud.ops.supervised_jobs import default_preflight

    notebooks = load_stack_file(STACKS / "Pulumi.notebooks.yaml")
    assert default_preflight(SETTINGS, GROUP) == "quick"
    assert default_preflight(notebooks, "gpu-cloud-notebooks-workbench") == "off"

    clients = Clients.of(aws)
    arn = start(clients, SETTINGS, new_job(SETTINGS, "trainers", COMMAND, nodes=2), poll=0)

    assert json.loads(clients.states.describe_execution(executionArn=arn)["input"])["preflight"] == "preflight"
    assert ended(clients, arn).status == "SUCCEEDED"
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "default: quick on a multiNode group, else off" in " ".join(capsys.readouterr().out.split())


@SUPERVISOR
def test_two_jobs_on_one_group_keep_their_own_markers(aws, agents):
    """Each job's marker is its own: the end of a second job on the group leaves the first job's
    marker, which the node-left branch needs should the first job's supervision die (issue 37)."""
    clients = Clients.of(aws)
    machine = f"arn:aws:states:{REGION}:123456789012:stateMachine:{job_supervisor_name(SETTINGS.name_base)}"
    quiet = {"source": "aws.autoscaling", "detail-type": "EC2 Instance Terminate Successful",
             "detail": {"AutoScalingGroupName": GROUP, "EC2InstanceId": "i-0123456789abcdef0"}}
    no_job = clients.states.start_execution(stateMachineArn=machine, input=json.dumps(quiet))["executionArn"]
    assert ended(clients, no_job).status == "SUCCEEDED"  # an instance left a group without jobs
    hold_the_first_command(agents)
    clients, first_arn, first = detached(aws)
    await_marker(aws, first)

    _, second_arn, second = detached(aws)
    assert ended(clients, second_arn).status == "SUCCEEDED"

    listed = aws.client("s3").list_objects_v2(Bucket=BUCKET, Prefix="runs/vision-train/jobs/groups/")
    assert [item["Key"] for item in listed.get("Contents", [])] == [
        f"runs/vision-train/jobs/groups/{GROUP}/{first.job_id}.json"]
    stop(clients, SETTINGS, first.job_id, say=lambda line: None)
    ended(clients, first_arn)
