"""The job supervisor: a Step Functions Standard workflow (Amazon States Language, JSONPath) that
runs a job to its end in AWS, so that closing the laptop that started it changes nothing.

Why Step Functions and not SSM Automation: a job lives up to days and polls its nodes all that
time. A Standard workflow runs up to one year and is billed per state transition (Step Functions
developer guide, "Choosing workflow type in Step Functions"; read 2026-11-28); an Automation
runbook's `aws:executeAwsApi` and `aws:waitForAwsResourceProperty` steps could call the same APIs,
but an Automation execution stops at its `timeoutSeconds` per step and 7 days of history, and loops
need `aws:loop` with at most 100 iterations (SSM user guide, "aws:loop"; read 2026-11-28), too few
for a watch of a two-day job. Step Functions also calls Auto Scaling, EC2, SSM, S3 and SNS with
the AWS SDK integrations (`arn:aws:states:::aws-sdk:<service>:<action>`, "Integrating services
with Step Functions", read 2026-11-28) and keeps each execution's history and status for `jobs`,
and EventBridge starts it on Auto Scaling's events. moto executes the same definition against its
own backends (`stepfunctions: execute_state_machine`), so the tests run it.

What it does, in order: raise the group to N nodes (within MaxSize), wait for N InService, take
the first N as Auto Scaling lists them (their addresses in DescribeInstances' order are the
rendezvous: the first is MASTER_ADDR), with `preflight` not `off` run the stack's job document's
`preflight` action on them first, send the job document (one command per 50 nodes), record the
attempt beside the checkpoints, and poll every node's invocation. A node that leaves service, or
whose launcher exits EXIT_DRAINED, ends the attempt: the others are cancelled and stopped, and the
job is sent again with the next attempt number, up to `maxRestarts` resumes. Every end (succeeded,
failed with the reason, out of retries, no checkpoint, no nodes in time, the supervisor's own
error) is published to the stack's topic before the execution ends.

Only JSONPath's own features are used: ASL has no sort, join or filter that answers an empty list,
so in-service ids come from a Map that returns `{}` for others (read with `$[*].id`), addresses are
joined by a short loop, and a poll's verdict is `States.ArrayContains` over each node's tag.
"""

from __future__ import annotations

import json
from typing import Any

from gpucloud.node.launcher import EXIT_DRAINED

SDK = "arn:aws:states:::aws-sdk:"
SEND_COMMAND_MAX_INSTANCES = 50
"""SendCommand takes at most 50 instance ids (SSM API reference, SendCommand `InstanceIds`)."""
DELIVERY_TIMEOUT_SECONDS = 600
TERMINAL = ("Success", "Failed", "Cancelled", "TimedOut")
"""Invocation statuses after which the command no longer runs on that node (SSM API reference,
GetCommandInvocation `Status`; read 2026-11-25)."""
PREFLIGHT_ACTION = "preflight"
"""The job document's action the Preflight step sends (the node side is issue 37's preflight)."""
ENDS = ("succeeded", "failed", "out-of-retries", "no-checkpoint", "no-nodes", "preflight-failed", "error")
"""What a job's end message says it was (`end.state`)."""

Document = dict[str, Any]


def _task(action: str, parameters: Document, next_state: str, **fields: Any) -> Document:
    """An AWS SDK integration task whose errors end the job through SupervisorError."""
    return {"Type": "Task", "Resource": f"{SDK}{action}", "Parameters": parameters, "Next": next_state,
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}], **fields}


def _end(state: str, message: str, *arguments: str) -> Document:
    """A Pass that sets `$.end` to the job's end and goes on to notify the topic."""
    return {"Type": "Pass", "ResultPath": "$.end", "Next": "Notify",
            "Parameters": {"state": state, "message.$": f"States.Format('{message}', {', '.join(arguments)})"}}


def _in_service(result_path: str, next_state: str) -> Document:
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


def _describe_group(name: str, next_state: str) -> dict[str, Document]:
    """The group's desired capacity, MaxSize and instances at `$.group` (`gpucloud run` checked
    that it exists). `[0]` is taken whole, then its fields: a path ending in `[0].Field` reads
    `[value]` in moto's evaluator (moto/stepfunctions/parser/asl/utils/json_path.py, moto 5.2.5)."""
    return {
        name: _task("autoscaling:describeAutoScalingGroups", {"AutoScalingGroupNames.$": "States.Array($.job.groupName)"},
                    f"{name}Fields", ResultPath="$.group", ResultSelector={"group.$": "$.AutoScalingGroups[0]"}),
        f"{name}Fields": {"Type": "Pass", "ResultPath": "$.group", "Next": next_state, "Parameters": {
            "desired.$": "$.group.group.DesiredCapacity", "maxSize.$": "$.group.group.MaxSize",
            "instances.$": "$.group.group.Instances"}},
    }


def _start_states() -> dict[str, Document]:
    """Raise the group to N nodes, refused above MaxSize."""
    return {
        **_describe_group("ReadGroup", "CheckSize"),
        "CheckSize": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.job.nodes", "NumericGreaterThanPath": "$.group.maxSize", "Next": "AboveMaxSize"},
                {"Variable": "$.group.desired", "NumericLessThanPath": "$.job.nodes",
                 "Next": "RaiseCapacity"},
            ],
            "Default": "StartWaiting",
        },
        "AboveMaxSize": _end("error", "job {}: {} nodes is above the MaxSize {} of group {}", "$.job.jobId",
                             "$.job.nodes", "$.group.maxSize", "$.job.groupName"),
        "RaiseCapacity": _task("autoscaling:setDesiredCapacity",
                               {"AutoScalingGroupName.$": "$.job.groupName", "DesiredCapacity.$": "$.job.nodes",
                                "HonorCooldown": False}, "StartWaiting", ResultPath=None),
    }


def _wait_states() -> dict[str, Document]:
    """Wait for N InService nodes (up to `nodeTimeout` seconds), pick them, join their addresses."""
    return {
        "StartWaiting": {"Type": "Pass", "Result": 0, "ResultPath": "$.waited", "Next": "ReadNodes"},
        **_describe_group("ReadNodes", "InServiceNodes"),
        "InServiceNodes": _in_service("$.inService", "CountNodes"),
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
        "NoNodes": _end("no-nodes", "job {}: group {} did not reach {} nodes in service within {} s (attempt {})",
                        "$.job.jobId", "$.job.groupName", "$.job.nodes", "$.nodeTimeout", "$.attempt"),
        "PickNodes": _task(
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


def _parameters(action: str) -> Document:
    """The job document's parameters for this attempt (values prepared by `gpucloud run` in `$.job.launch`)."""
    return {
        "action": [action],
        "job.$": "States.Array($.job.jobId)",
        "nodes.$": "States.Array($.join.text)",
        "attempt.$": "States.Array(States.Format('{}', $.attempt))",
        **{f"{name}.$": f"States.Array($.job.launch.{name})"
           for name in ("port", "gpusPerNode", "image", "checkpointUri", "commandB64")},
    }


def _send(name: str, document_name: str, log_group_name: str, action: str, next_state: str) -> dict[str, Document]:
    """Build `<name>Parameters` and send the document to the chosen nodes, 50 a command, into `$.sent`."""
    send = _task(
        "ssm:sendCommand",
        {"DocumentName": document_name, "InstanceIds.$": "$.instanceIds", "Parameters.$": "$.parameters",
         "Comment.$": "$.comment", "TimeoutSeconds": DELIVERY_TIMEOUT_SECONDS,
         "CloudWatchOutputConfig": {"CloudWatchLogGroupName": log_group_name, "CloudWatchOutputEnabled": True}},
        "Sent", ResultSelector={"commandId.$": "$.Command.CommandId"}, ResultPath="$.command")
    send.pop("Catch")  # a Map's iteration has no SupervisorError of its own: the Map's Catch takes it
    comment = ("States.Format('gpucloud job {} attempt {}', $.job.jobId, $.attempt)" if action == "launch"
               else f"States.Format('gpucloud job {{}} {action} {{}}', $.job.jobId, $.attempt)")
    return {
        f"{name}Parameters": {"Type": "Pass", "Parameters": _parameters(action), "ResultPath": "$.parameters",
                              "Next": f"{name}Comment"},
        f"{name}Comment": {"Type": "Pass", "Parameters": {"value.$": comment}, "ResultPath": "$.comment",
                           "Next": name},
        name: {
            "Type": "Map",
            "ItemsPath": "$.batches.value",
            "ItemSelector": {"instanceIds.$": "$$.Map.Item.Value", "parameters.$": "$.parameters",
                             "comment.$": "$.comment.value"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Send",
                              "States": {"Send": send, "Sent": {"Type": "Pass", "End": True, "Parameters": {
                                  "commandId.$": "$.command.commandId", "instanceIds.$": "$.instanceIds"}}}},
            "ResultPath": "$.sent",
            "Next": next_state,
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}],
        },
    }


def _batches(next_state: str) -> Document:
    return {"Type": "Pass", "ResultPath": "$.batches", "Next": next_state,
            "Parameters": {"value.$": f"States.ArrayPartition($.chosen.instanceIds, {SEND_COMMAND_MAX_INSTANCES})"}}


def _node_verdict() -> Document:
    """One node's state in a poll: its invocation, tagged lost / running / failed / ok."""
    def tag(value: str) -> Document:
        return {"Type": "Pass", "End": True, "Parameters": {
            "instanceId.$": "$.instanceId", "status.$": "$.invocation.status", "code.$": "$.invocation.code",
            "tag": value}}

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
                "Choices": [
                    {"Variable": "$.present.value", "BooleanEquals": False, "Next": "Lost"},
                    {"And": [{"Or": terminal}, {"Variable": "$.invocation.code", "NumericEquals": EXIT_DRAINED}],
                     "Next": "Lost"},
                    {"Variable": "$.invocation.status", "StringEquals": "Success", "Next": "Ok"},
                    {"Or": terminal, "Next": "NodeFailed"},
                ],
                "Default": "Running",
            },
            "Lost": tag("lost"), "Running": tag("running"), "NodeFailed": tag("failed"), "Ok": tag("ok"),
        },
    }


def _watch_states(prefix: str, on_ok: str, on_failed: str) -> dict[str, Document]:
    """Poll every node of `$.sent` until one is lost (NodeLost), all ended (on_ok / on_failed)."""
    nodes = {
        "Type": "Map",
        "ItemsPath": "$.instanceIds",
        "ItemSelector": {"commandId.$": "$.commandId", "instanceId.$": "$$.Map.Item.Value", "inService.$": "$.inService"},
        "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, **_node_verdict()},
        "End": True,
    }
    return {
        **_describe_group(f"{prefix}ReadGroup", f"{prefix}InService"),
        f"{prefix}InService": _in_service("$.inService", f"{prefix}Poll"),
        f"{prefix}Poll": {
            "Type": "Map",
            "ItemsPath": "$.sent",
            "ItemSelector": {"commandId.$": "$$.Map.Item.Value.commandId",
                             "instanceIds.$": "$$.Map.Item.Value.instanceIds", "inService.$": "$.inService.ids"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Nodes", "States": {"Nodes": nodes}},
            "ResultSelector": {"tags.$": "$[*][*].tag", "nodes.$": "$[*][*]"},
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
        f"{prefix}Wait": {"Type": "Wait", "SecondsPath": "$.pollSeconds", "Next": f"{prefix}ReadGroup"},
    }


def _resume_states() -> dict[str, Document]:
    """A node left: cancel the attempt's commands, stop the job on the other nodes, and resume
    from the checkpoint unless there is none or the retry budget is spent."""
    stop = _task(
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
        "NoCheckpoint": _end("no-checkpoint", "job {} stopped: a node left during attempt {} and the stack has no "
                             "data.writePrefixes, so there is no checkpoint to resume from: {}", "$.job.jobId",
                             "$.attempt", "States.JsonToString($.watch.nodes)"),
        "OutOfRetries": _end("out-of-retries", "job {} stopped: a node left during attempt {} after {} resumes "
                             "(max restarts); its checkpoints stay at {}", "$.job.jobId", "$.attempt",
                             "$.maxRestarts", "$.job.launch.checkpointUri"),
    }


def _record_states(bucket: str, jobs_prefix: str, next_state: str) -> dict[str, Document]:
    """The attempt's record at `<jobs prefix><job id>/attempts/<n>.json`, beside the checkpoints."""
    return {
        "RecordBody": {"Type": "Pass", "ResultPath": "$.record", "Next": "Record", "Parameters": {
            "attempt.$": "$.attempt", "commands.$": "$.sent", "instanceIds.$": "$.chosen.instanceIds",
            "privateIps.$": "$.chosen.privateIps", "execution.$": "$$.Execution.Id"}},
        "Record": _task("s3:putObject", {
            "Bucket": bucket, "Key.$": f"States.Format('{jobs_prefix}{{}}/attempts/{{}}.json', $.job.jobId, $.attempt)",
            "Body.$": "States.JsonToString($.record)", "ContentType": "application/json"}, next_state, ResultPath=None),
    }


def _end_states(topic_arn: str) -> dict[str, Document]:
    """Every end goes to the topic, then the execution succeeds or fails with the end as its error."""
    return {
        "JobSucceeded": _end("succeeded", "job {} succeeded on attempt {}: {}", "$.job.jobId", "$.attempt",
                             "States.JsonToString($.watch.nodes)"),
        "JobFailed": _end("failed", "job {} failed on attempt {}: a command ended with a non-zero exit status: {}", "$.job.jobId",
                          "$.attempt", "States.JsonToString($.watch.nodes)"),
        "PreflightFailed": _end("preflight-failed", "job {}: the preflight failed on attempt {}: {}", "$.job.jobId",
                                "$.attempt", "States.JsonToString($.watch.nodes)"),
        "SupervisorError": _end("error", "job {}: the supervisor stopped on an AWS error: {}", "$.job.jobId",
                                "$.error.Cause"),
        "Notify": {
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


def supervisor_definition(*, document_name: str, log_group_name: str, topic_arn: str, bucket: str | None,
                          jobs_prefix: str | None, preflight: bool = True) -> Document:
    """The state machine of the stack's jobs: a pure function of the stack's names (see the module doc).
    The execution input is `supervisor_input`'s; `preflight` adds the Preflight step, which an
    input's `preflight: off` skips."""
    after_launch = "RecordBody" if bucket and jobs_prefix else "WatchReadGroup"
    states: dict[str, Document] = {
        "Start": {"Type": "Pass", "Result": document_name, "ResultPath": "$.documentName", "Next": "ReadGroup"},
        **_start_states(),
        **_wait_states(),
        "Batches": _batches("PreflightWanted" if preflight else "LaunchParameters"),
        **_send("Launch", document_name, log_group_name, "launch", after_launch),
        **(_record_states(bucket, jobs_prefix, "WatchReadGroup") if bucket and jobs_prefix else {}),
        **_watch_states("Watch", on_ok="JobSucceeded", on_failed="JobFailed"),
        **_resume_states(),
        **_end_states(topic_arn),
    }
    if preflight:
        states |= {
            "PreflightWanted": {"Type": "Choice", "Default": "PreflightParameters",
                                "Choices": [{"Variable": "$.preflight", "StringEquals": "off", "Next": "LaunchParameters"}]},
            **_send("Preflight", document_name, log_group_name, PREFLIGHT_ACTION, "PreflightReadGroup"),
            **_watch_states("Preflight", on_ok="LaunchParameters", on_failed="PreflightFailed"),
        }
    return {"Comment": "gpu-cloud job supervisor: run a job on N nodes, resume it from its checkpoint on node loss",
            "StartAt": "Start", "States": states}


def supervisor_definition_content(**values: Any) -> str:
    return json.dumps(supervisor_definition(**values), indent=1)


def supervisor_input(*, job_id: str, group_name: str, nodes: int, launch: dict[str, str], max_restarts: int,
                     node_timeout: int, poll_seconds: int, preflight: str = "off") -> Document:
    """An execution's input: the job, and `launch`, the job document's values that stay the same
    across attempts (port, gpusPerNode, image, checkpointUri, commandB64)."""
    return {"job": {"jobId": job_id, "groupName": group_name, "nodes": nodes, "launch": launch},
            "attempt": 0, "maxRestarts": max_restarts, "nodeTimeout": node_timeout, "pollSeconds": poll_seconds,
            "preflight": preflight}
