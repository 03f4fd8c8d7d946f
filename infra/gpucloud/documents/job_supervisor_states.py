"""The job supervisor's states, one builder per phase (documents/job_supervisor.py assembles them):
raise the group, wait for and pick N nodes, watch every node (the sends, 50 nodes a command:
documents/job_supervisor_sends.py), stop and resume on node loss, record attempts, and end
through the stack's topic."""

from __future__ import annotations

from typing import Any


SDK = "arn:aws:states:::aws-sdk:"
EXIT_DRAINED = 75
"""The launcher's exit status when the node's drain stopped the job (gpucloud.node.launcher
EXIT_DRAINED, which documents may not import: tests/ops/test_job_supervisor_documents.py holds
them equal)."""
SEND_COMMAND_MAX_INSTANCES = 50
"""SendCommand takes at most 50 instance ids (SSM API reference, SendCommand `InstanceIds`)."""
DELIVERY_TIMEOUT_SECONDS = 600
TERMINAL = ("Success", "Failed", "Cancelled", "TimedOut")
"""Invocation statuses after which the command no longer runs on that node (SSM API reference,
GetCommandInvocation `Status`; read 2026-11-25)."""
PREFLIGHT_ACTION = "preflight"
"""The Preflight step's name for its send; the action it sends is the input's `preflight`."""
ENDS = ("succeeded", "failed", "out-of-retries", "no-checkpoint", "no-nodes", "preflight-failed", "error")
"""What a job's end message says it was (`end.state`)."""

Document = dict[str, Any]


def task(action: str, parameters: Document, next_state: str, **fields: Any) -> Document:
    """An AWS SDK integration task whose errors end the job through SupervisorError."""
    return {"Type": "Task", "Resource": f"{SDK}{action}", "Parameters": parameters, "Next": next_state,
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}], **fields}


def end_state(state: str, message: str, *arguments: str) -> Document:
    """A Pass that sets `$.end` to the job's end and goes on to notify the topic."""
    return {"Type": "Pass", "ResultPath": "$.end", "Next": "Notify",
            "Parameters": {"state": state, "message.$": f"States.Format('{message}', {', '.join(arguments)})"}}


def in_service_ids(result_path: str, next_state: str) -> Document:
    """DescribeAutoScalingGroups, then a Map that keeps the InService instances' ids at `<result_path>.ids`."""
    return {
        "Type": "Map",
        "ItemsPath": "$.group.instances",
        "ItemSelector": {"id.$": "$$.Map.Item.Value.InstanceId", "state.$": "$$.Map.Item.Value.LifecycleState"},
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "INLINE"},
            "StartAt": "Keep",
            "States": {
                "Keep": {"Type": "Choice", "Default": "Other",
                         "Choices": [{"Variable": "$.state", "StringEquals": "InService", "Next": "InService"}]},
                "InService": {"Type": "Pass", "Parameters": {"id.$": "$.id"}, "End": True},
                "Other": {"Type": "Pass", "Result": {}, "End": True},
            },
        },
        "ResultSelector": {"ids.$": "$[*].id"},
        "ResultPath": result_path,
        "Next": next_state,
    }


def describe_group(name: str, next_state: str) -> dict[str, Document]:
    """The group's desired capacity, MaxSize and instances at `$.group` (`gpucloud run` checked
    that it exists). `[0]` is taken whole, then its fields: a path ending in `[0].Field` reads
    `[value]` in moto's evaluator (moto/stepfunctions/parser/asl/utils/json_path.py, moto 5.2.5)."""
    return {
        name: task("autoscaling:describeAutoScalingGroups", {"AutoScalingGroupNames.$": "States.Array($.job.groupName)"},
                    f"{name}Fields", ResultPath="$.group", ResultSelector={"group.$": "$.AutoScalingGroups[0]"}),
        f"{name}Fields": {"Type": "Pass", "ResultPath": "$.group", "Next": next_state, "Parameters": {
            "desired.$": "$.group.group.DesiredCapacity", "maxSize.$": "$.group.group.MaxSize",
            "instances.$": "$.group.group.Instances"}},
    }


def start_states() -> dict[str, Document]:
    """Raise the group to N nodes, refused above MaxSize."""
    return {
        **describe_group("ReadGroup", "CheckSize"),
        "CheckSize": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.job.nodes", "NumericGreaterThanPath": "$.group.maxSize", "Next": "AboveMaxSize"},
                {"Variable": "$.group.desired", "NumericLessThanPath": "$.job.nodes",
                 "Next": "RememberCapacity"},
            ],
            "Default": "StartWaiting",
        },
        "AboveMaxSize": end_state("error", "job {}: {} nodes is above the MaxSize {} of group {}", "$.job.jobId",
                             "$.job.nodes", "$.group.maxSize", "$.job.groupName"),
        "RememberCapacity": {"Type": "Pass", "Parameters": {"value.$": "$.group.desired"}, "ResultPath": "$.raisedFrom",
                             "Next": "RaiseCapacity"},
        "RaiseCapacity": task("autoscaling:setDesiredCapacity",
                               {"AutoScalingGroupName.$": "$.job.groupName", "DesiredCapacity.$": "$.job.nodes",
                                "HonorCooldown": False}, "StartWaiting", ResultPath=None),
    }


def wait_states() -> dict[str, Document]:
    """Wait for N InService nodes (up to `nodeTimeout` seconds), pick them, join their addresses."""
    return {
        "StartWaiting": {"Type": "Pass", "Result": 0, "ResultPath": "$.waited", "Next": "ReadNodes"},
        **describe_group("ReadNodes", "InServiceNodes"),
        "InServiceNodes": in_service_ids("$.inService", "CountNodes"),
        "CountNodes": {"Type": "Pass", "Parameters": {"value.$": "States.ArrayLength($.inService.ids)"},
                       "ResultPath": "$.count", "Next": "EnoughNodes"},
        "EnoughNodes": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.count.value", "NumericGreaterThanEqualsPath": "$.job.nodes", "Next": "PickNodes"}],
            "Default": "NodesTimedOut",
        },
        "NodesTimedOut": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.waited", "NumericGreaterThanEqualsPath": "$.nodeTimeout", "Next": "NoNodes"}],
            "Default": "WaitForNodes",
        },
        "WaitForNodes": {"Type": "Wait", "SecondsPath": "$.pollSeconds", "Next": "CountWait"},
        "CountWait": {"Type": "Pass", "Parameters": {"value.$": "States.MathAdd($.waited, $.pollSeconds)"},
                      "ResultPath": "$.tick", "Next": "AddWait"},
        "AddWait": {"Type": "Pass", "InputPath": "$.tick.value", "ResultPath": "$.waited", "Next": "ReadNodes"},
        "NoNodes": end_state("no-nodes", "job {}: group {} did not reach {} nodes in service within {} s (attempt {})",
                        "$.job.jobId", "$.job.groupName", "$.job.nodes", "$.nodeTimeout", "$.attempt"),
        "PickNodes": task(
            "ec2:describeInstances",
            {"InstanceIds.$": "States.ArrayGetItem(States.ArrayPartition($.inService.ids, $.job.nodes), 0)"},
            "JoinFirst",
            ResultSelector={"instanceIds.$": "$.Reservations[*].Instances[*].InstanceId",
                            "privateIps.$": "$.Reservations[*].Instances[*].PrivateIpAddress"},
            ResultPath="$.chosen",
        ),
        "JoinFirst": {"Type": "Pass", "ResultPath": "$.join", "Next": "JoinMore",
                      "Parameters": {"text.$": "States.ArrayGetItem($.chosen.privateIps, 0)", "next": 1,
                                     "length.$": "States.ArrayLength($.chosen.privateIps)"}},
        "JoinMore": {"Type": "Choice", "Default": "Batches",
                      "Choices": [{"Variable": "$.join.next", "NumericLessThanPath": "$.join.length", "Next": "JoinNext"}]},
        "JoinNext": {"Type": "Pass", "ResultPath": "$.join", "Next": "JoinMore", "Parameters": {
            "text.$": "States.Format('{},{}', $.join.text, States.ArrayGetItem($.chosen.privateIps, $.join.next))",
            "next.$": "States.MathAdd($.join.next, 1)", "length.$": "$.join.length"}},
    }


def _node_verdict() -> Document:
    """One node's state in a poll: its invocation, tagged lost / running / failed / ok."""
    def tag(value: str) -> Document:
        return {"Type": "Pass", "End": True, "Parameters": {
            "instanceId.$": "$.instanceId", "status.$": "$.invocation.status", "code.$": "$.invocation.code",
            "tag": value, "digest.$": "States.Format('{}={}', $.instanceId, $.invocation.code)"}}

    terminal = [{"Variable": "$.invocation.status", "StringEquals": status} for status in TERMINAL]
    return {
        "StartAt": "Invocation",
        "States": {
            "Invocation": {
                "Type": "Task", "Resource": f"{SDK}ssm:getCommandInvocation",
                "Parameters": {"CommandId.$": "$.commandId", "InstanceId.$": "$.instanceId"},
                "ResultSelector": {"status.$": "$.Status", "code.$": "$.ResponseCode"},
                "ResultPath": "$.invocation", "Next": "Present",
                # InvocationDoesNotExist until the node's agent has the command: still pending.
                "Catch": [{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.missing", "Next": "NotDelivered"}],
            },
            "NotDelivered": {"Type": "Pass", "Result": {"status": "Pending", "code": -1}, "ResultPath": "$.invocation",
                             "Next": "Present"},
            "Present": {"Type": "Pass", "ResultPath": "$.present", "Next": "Classify",
                        "Parameters": {"value.$": "States.ArrayContains($.inService, $.instanceId)"}},
            "Classify": {
                "Type": "Choice",
                # A command that succeeded ended the node's share of the job: the node may leave
                # (a scale-in once the job was done) without the job being sent again.
                "Choices": [
                    {"Variable": "$.invocation.status", "StringEquals": "Success", "Next": "Ok"},
                    {"Variable": "$.present.value", "BooleanEquals": False, "Next": "Lost"},
                    {"And": [{"Or": terminal}, {"Variable": "$.invocation.code", "NumericEquals": EXIT_DRAINED}],
                     "Next": "Lost"},
                    {"Or": terminal, "Next": "NodeFailed"},
                ],
                "Default": "Running",
            },
            "Lost": tag("lost"), "Running": tag("running"), "NodeFailed": tag("failed"), "Ok": tag("ok"),
        },
    }


def watch_states(prefix: str, on_ok: str, on_failed: str, after_wait: str | None = None) -> dict[str, Document]:
    """Poll every node of `$.sent` until one is lost (NodeLost), all ended (on_ok / on_failed);
    between polls wait, then go to `after_wait` (the poll count) or poll again."""
    nodes = {
        "Type": "Map",
        "ItemsPath": "$.instanceIds",
        "ItemSelector": {"commandId.$": "$.commandId", "instanceId.$": "$$.Map.Item.Value", "inService.$": "$.inService"},
        "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, **_node_verdict()},
        "End": True,
    }
    return {
        **describe_group(f"{prefix}ReadGroup", f"{prefix}InService"),
        f"{prefix}InService": in_service_ids("$.inService", f"{prefix}Poll"),
        f"{prefix}Poll": {
            "Type": "Map",
            "ItemsPath": "$.sent",
            "ItemSelector": {"commandId.$": "$$.Map.Item.Value.commandId",
                             "instanceIds.$": "$$.Map.Item.Value.instanceIds", "inService.$": "$.inService.ids"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Nodes", "States": {"Nodes": nodes}},
            "ResultSelector": {"tags.$": "$[*][*].tag", "nodes.$": "$[*][*]", "digest.$": "$[*][*].digest"},
            "ResultPath": "$.watch",
            "Next": f"{prefix}Summary",
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}],
        },
        f"{prefix}Summary": {"Type": "Pass", "ResultPath": "$.summary", "Next": f"{prefix}Verdict", "Parameters": {
            f"{tag}.$": f"States.ArrayContains($.watch.tags, '{tag}')" for tag in ("lost", "running", "failed")}},
        f"{prefix}Verdict": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.summary.lost", "BooleanEquals": True, "Next": "NodeLost"},
                {"Variable": "$.summary.running", "BooleanEquals": True, "Next": f"{prefix}Wait"},
                {"Variable": "$.summary.failed", "BooleanEquals": True, "Next": on_failed},
            ],
            "Default": on_ok,
        },
        f"{prefix}Wait": {"Type": "Wait", "SecondsPath": "$.pollSeconds", "Next": after_wait or f"{prefix}ReadGroup"},
    }


def resume_states() -> dict[str, Document]:
    """A node left: cancel the attempt's commands, stop the job on the other nodes, and resume
    from the checkpoint unless there is none or the retry budget is spent."""
    stop = task(
        "ssm:sendCommand",
        {"DocumentName.$": "$.documentName", "InstanceIds.$": "States.Array($.node.instanceId)",
         "Parameters": {"action": ["launch-stop"], "job.$": "States.Array($.jobId)"},
         "Comment.$": "States.Format('gpucloud job {} stop', $.jobId)", "TimeoutSeconds": DELIVERY_TIMEOUT_SECONDS},
        "Stopped", ResultPath=None)
    stop.pop("Catch")
    cancel = {"Type": "Task", "Resource": f"{SDK}ssm:cancelCommand", "Parameters": {"CommandId.$": "$.commandId"},
              "ResultPath": None, "End": True,
              # a command already ended cannot be cancelled: that is no reason to stop resuming
              "Catch": [{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.notCancelled", "Next": "Ended"}]}
    return {
        "NodeLost": {
            "Type": "Map", "ItemsPath": "$.sent", "ResultPath": None, "Next": "StopOthers",
            "ItemSelector": {"commandId.$": "$$.Map.Item.Value.commandId"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Cancel",
                              "States": {"Cancel": cancel, "Ended": {"Type": "Pass", "End": True}}},
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}],
        },
        "StopOthers": {
            "Type": "Map", "ItemsPath": "$.watch.nodes", "ResultPath": None, "Next": "CanResume",
            "ItemSelector": {"node.$": "$$.Map.Item.Value", "jobId.$": "$.job.jobId", "documentName.$": "$.documentName"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "StillThere", "States": {
                "StillThere": {"Type": "Choice", "Default": "Stop",
                               "Choices": [{"Variable": "$.node.tag", "StringEquals": "lost", "Next": "Stopped"}]},
                "Stop": stop,
                "Stopped": {"Type": "Pass", "End": True}}},
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}],
        },
        "CanResume": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.job.launch.checkpointUri", "StringEquals": "", "Next": "NoCheckpoint"},
                {"Variable": "$.attempt", "NumericGreaterThanEqualsPath": "$.maxRestarts", "Next": "OutOfRetries"},
            ],
            "Default": "NextAttempt",
        },
        "NextAttempt": {"Type": "Pass", "Parameters": {"value.$": "States.MathAdd($.attempt, 1)"},
                        "ResultPath": "$.tick", "Next": "SetAttempt"},
        "SetAttempt": {"Type": "Pass", "InputPath": "$.tick.value", "ResultPath": "$.attempt", "Next": "StartWaiting"},
        "NoCheckpoint": end_state("no-checkpoint", "job {} stopped: a node left during attempt {} and the stack has no "
                             "data.writePrefixes, so there is no checkpoint to resume from: {}", "$.job.jobId",
                             "$.attempt", "States.JsonToString($.watch.nodes)"),
        "OutOfRetries": end_state("out-of-retries", "job {} stopped: a node left during attempt {} after {} resumes "
                             "(max restarts); its checkpoints stay at {}", "$.job.jobId", "$.attempt",
                             "$.maxRestarts", "$.job.launch.checkpointUri"),
    }


def record_states(bucket: str, jobs_prefix: str, next_state: str) -> dict[str, Document]:
    """The attempt's record at `<jobs prefix><job id>/attempts/<n>.json`, beside the checkpoints."""
    return {
        "RecordBody": {"Type": "Pass", "ResultPath": "$.record", "Next": "Record", "Parameters": {
            "attempt.$": "$.attempt", "commands.$": "$.sent", "instanceIds.$": "$.chosen.instanceIds",
            "privateIps.$": "$.chosen.privateIps", "execution.$": "$$.Execution.Id"}},
        "Record": task("s3:putObject", {
            "Bucket": bucket, "Key.$": f"States.Format('{jobs_prefix}{{}}/attempts/{{}}.json', $.job.jobId, $.attempt)",
            "Body.$": "States.JsonToString($.record)", "ContentType": "application/json"}, next_state, ResultPath=None),
    }


def end_states(topic_arn: str) -> dict[str, Document]:
    """Every end goes through `Notify` (documents/job_supervisor_capacity.py; then `Forget`, which
    drops the job's marker, on a stack with a write prefix) to the topic, then the execution
    succeeds or fails with the end as its error."""
    return {
        "JobSucceeded": end_state("succeeded", "job {} succeeded on attempt {}: {}", "$.job.jobId", "$.attempt",
                             "States.JsonToString($.watch.nodes)"),
        "JobFailed": end_state("failed", "job {} failed on attempt {}: a command ended with a non-zero exit status: {}", "$.job.jobId",
                          "$.attempt", "States.JsonToString($.watch.nodes)"),
        "SupervisorError": end_state("error", "job {}: the supervisor stopped on an AWS error: {}", "$.job.jobId",
                                "$.error.Cause"),
        "Publish": {
            "Type": "Task", "Resource": "arn:aws:states:::sns:publish", "ResultPath": None, "Next": "Outcome",
            "Parameters": {"TopicArn": topic_arn, "Message.$": "$.end.message",
                           "Subject.$": "States.Format('gpu-cloud job {}: {}', $.job.jobId, $.end.state)"},
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.notifyError", "Next": "Outcome"}],
        },
        "Outcome": {"Type": "Choice", "Default": "Stopped",
                    "Choices": [{"Variable": "$.end.state", "StringEquals": "succeeded", "Next": "Succeeded"}]},
        "Succeeded": {"Type": "Pass", "Next": "Done", "Parameters": {
            "attempt.$": "$.attempt", "nodes.$": "$.watch.nodes", "end.$": "$.end"}},
        "Done": {"Type": "Succeed"},
        "Stopped": {"Type": "Fail", "ErrorPath": "$.end.state", "CausePath": "$.end.message"},
    }
