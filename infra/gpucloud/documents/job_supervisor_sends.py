"""The job supervisor's sends: the job document (or the preflight's level) to the chosen nodes, one
command per 50, each a Map iteration; and what a refused command does to the others sent."""

from __future__ import annotations

from gpucloud.documents.job_supervisor_states import (
    DELIVERY_TIMEOUT_SECONDS,
    PREFLIGHT_ACTION,
    SDK,
    SEND_COMMAND_MAX_INSTANCES,
    Document,
    end_state,
    task,
)


def _parameters(action: str) -> Document:
    """The job document's parameters for this attempt (values prepared by `gpucloud run` in
    `$.job.launch`); the Preflight step's action is the input's `preflight`, the job document's
    action of the level asked for (documents/jobs.py PREFLIGHT_ACTIONS)."""
    return {
        **({"action.$": "States.Array($.preflight)"} if action == PREFLIGHT_ACTION else {"action": [action]}),
        "job.$": "States.Array($.job.jobId)",
        "nodes.$": "States.Array($.join.text)",
        "attempt.$": "States.Array(States.Format('{}', $.attempt))",
        **{f"{name}.$": f"States.Array($.job.launch.{name})"
           for name in ("port", "gpusPerNode", "image", "checkpointUri", "commandB64")},
    }


def send_states(name: str, document_name: str, log_group_name: str, action: str, next_state: str) -> dict[str, Document]:
    """Build `<name>Parameters` and send the document to the chosen nodes, 50 a command, into `$.sent`."""
    send = task(
        "ssm:sendCommand",
        {"DocumentName": document_name, "InstanceIds.$": "$.instanceIds", "Parameters.$": "$.parameters",
         "Comment.$": "$.comment", "TimeoutSeconds": DELIVERY_TIMEOUT_SECONDS,
         "CloudWatchOutputConfig": {"CloudWatchLogGroupName": log_group_name, "CloudWatchOutputEnabled": True}},
        "Sent", ResultSelector={"commandId.$": "$.Command.CommandId"}, ResultPath="$.command")
    send["Catch"] = REFUSED
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
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Send", "States": {
                "Send": send,
                **sent_or_not("$.instanceIds")}},
            "ResultSelector": SENDING,
            "ResultPath": "$.sending",
            "Next": f"{name}Refused",
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}],
        },
        **refusal_states(name, next_state),
    }


REFUSED = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.refused", "Next": "NotSent"}]
"""The Catch of a send inside a Map iteration: a command Run Command refuses is told apart (the
iteration ends `NotSent`) instead of failing the Map state. An error no state of an iteration
catches fails the whole Map state, its other iterations stopped and their results (the commands
they sent) never in its output (Amazon States Language specification, "Map State"; Step Functions
developer guide, "Using Map state in Inline mode"; read 2026-11-28); told apart, the sent ones are
cancelled (`CancelSent`): their ranks would wait for the others at the rendezvous."""
SENDING = {"items.$": "$", "tags.$": "$[*].sent", "causes.$": "$[*].cause"}
"""A sending Map's `ResultSelector`, at `$.sending`: each iteration's command, its tag, the refusals' reasons."""


def sent_or_not(instance_ids: str) -> dict[str, Document]:
    """An iteration's end after its send: `Sent` (its command at `$.command`) or `NotSent` (REFUSED)."""
    return {
        "Sent": {"Type": "Pass", "End": True, "Parameters": {
            "commandId.$": "$.command.commandId", "instanceIds.$": instance_ids, "sent": "sent"}},
        "NotSent": {"Type": "Pass", "End": True, "Parameters": {
            "instanceIds.$": instance_ids, "sent": "refused", "cause.$": "$.refused.Cause"}},
    }


def refusal_states(name: str, next_state: str) -> dict[str, Document]:
    """After a sending Map: a refused command cancels the others (`CancelSent`); else the commands at `$.sent`."""
    return {
        f"{name}Refused": {"Type": "Pass", "ResultPath": "$.refusal", "Next": f"{name}AllSent", "Parameters": {
            "value.$": "States.ArrayContains($.sending.tags, 'refused')"}},
        f"{name}AllSent": {"Type": "Choice", "Default": f"{name}Kept", "Choices": [
            {"Variable": "$.refusal.value", "BooleanEquals": True, "Next": "CancelSent"}]},
        f"{name}Kept": {"Type": "Pass", "InputPath": "$.sending.items", "ResultPath": "$.sent", "Next": next_state},
    }


def refused_states() -> dict[str, Document]:
    """A batch was refused: cancel the batches sent (a cancel that fails leaves that batch to the
    command's own limits) and end the job with Run Command's reason."""
    cancel = {"Type": "Task", "Resource": f"{SDK}ssm:cancelCommand", "Parameters": {"CommandId.$": "$.commandId"},
              "ResultPath": None, "End": True,
              "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.notCancelled", "Next": "Left"}]}
    return {
        "CancelSent": {
            "Type": "Map", "ItemsPath": "$.sending.items", "ResultPath": None, "Next": "SendRefused",
            "ItemSelector": {"item.$": "$$.Map.Item.Value"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "WasSent", "States": {
                "WasSent": {"Type": "Choice", "Default": "Left", "Choices": [
                    {"Variable": "$.item.sent", "StringEquals": "sent", "Next": "Id"}]},
                "Id": {"Type": "Pass", "Parameters": {"commandId.$": "$.item.commandId"}, "Next": "Cancel"},
                "Cancel": cancel, "Left": {"Type": "Pass", "End": True}}},
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}]},
        "SendRefused": end_state("error", "job {}: Run Command refused a batch of attempt {} and the batches already "
                                 "sent were cancelled: {}", "$.job.jobId", "$.attempt",
                                 "States.JsonToString($.sending.causes)"),
    }


def batches(next_state: str) -> Document:
    return {"Type": "Pass", "ResultPath": "$.batches", "Next": next_state,
            "Parameters": {"value.$": f"States.ArrayPartition($.chosen.instanceIds, {SEND_COMMAND_MAX_INSTANCES})"}}
