"""A job's supervision carried on by a new execution of the same state machine, in two cases:

- Before the history quota: a Standard execution keeps at most 25,000 events in its history and
  fails beyond it (Step Functions developer guide, "Step Functions service quotas", "Maximum
  execution history size"; read 2026-11-28), and each poll of N nodes writes some 30 + 21 N events
  (the Map iterations' events are the execution's own; counted on moto's interpreter, which writes
  an event per state entered and exited, task step and Map iteration, for 1, 2 and 4 nodes). After `pollsPerExecution` polls the
  watch starts its continuation, named `<job id>-g<generation>`, with what it watches, and ends
  SUCCEEDED with `{"continuedAs": <its ARN>}`.
- After the supervision died: EventBridge starts the state machine with each Auto Scaling event of
  an instance leaving a stack's group (`node_left_pattern`). That execution lists the markers of
  the group's jobs, `<jobs prefix>groups/<group>/<job id>.json` (one per job, so that two jobs on
  one group keep their own: written at each send and continuation, deleted at that job's end), and
  for each whose execution is FAILED or TIMED_OUT (not ABORTED: `gpucloud stop`) it starts the
  continuation, named `<job id>-r<the event's instance id>`; the continuation's
  next poll finds the lost node and resumes the job from its checkpoint on the new set. A running
  supervision needs nothing: its own poll finds the loss. Without a write prefix there is no
  marker, and the event execution ends at once.
"""

from __future__ import annotations

from gpucloud.documents.job_supervisor_states import SDK, Document, task

CONTINUED = ("job", "attempt", "maxRestarts", "nodeTimeout", "pollSeconds", "preflight", "preflightTry",
             "preflightRounds", "pollsPerExecution", "sent")
"""What a continuation takes from the execution it continues (its input, with `generation` and `polls`)."""
HISTORY_EVENTS_BUDGET = 20000
"""Events an execution's polls may use of the 25,000 its history keeps; the rest are its start and ends."""
NODE_LEFT_DETAIL_TYPES = ("EC2 Instance Terminate Successful", "EC2 Instance-terminate Lifecycle Action")
"""Auto Scaling's events when an instance leaves a group (Auto Scaling user guide, "Amazon EC2 Auto
Scaling event reference"; read 2026-11-28)."""


def polls_per_execution(nodes: int) -> int:
    """How many polls of `nodes` nodes fit in one execution's history budget (30 + 21 N events a
    poll, rounded up for a group holding more instances than the job); at least one, so beyond
    some 800 nodes a single poll outgrows the budget."""
    return max(1, HISTORY_EVENTS_BUDGET // (40 + 24 * nodes))


def node_left_pattern(group_names: list[str]) -> Document:
    """The EventBridge pattern of an instance leaving one of the stack's groups."""
    return {"source": ["aws.autoscaling"], "detail-type": list(NODE_LEFT_DETAIL_TYPES),
            "detail": {"AutoScalingGroupName": sorted(group_names)}}


def marker_folder(jobs_prefix: str) -> str:
    """`States.Format` template of a group's markers' folder (its one argument: the group's name)."""
    return f"{jobs_prefix}groups/{{}}/"


def marker_key(jobs_prefix: str) -> str:
    """`States.Format` template of a job's marker's key (its arguments: the group's name, the job id)."""
    return f"{marker_folder(jobs_prefix)}{{}}.json"


def _marker_key_of_job(jobs_prefix: str) -> str:
    return f"States.Format('{marker_key(jobs_prefix)}', $.job.groupName, $.job.jobId)"


def _continuation(source: str) -> Document:
    """The continuation's input from `source` (`$` or `$.found.marker`)."""
    return {f"{name}.$": f"{source}.{name}" for name in CONTINUED}


def entry_states(document_name: str, marks: bool) -> dict[str, Document]:
    """`Start`: an EventBridge event (it has `detail`) goes to the node-left branch, a continuation
    (it has `sent`) back to the watch, a new job to ReadGroup."""
    return {
        "Start": {"Type": "Choice", "Default": "Begin", "Choices": [
            {"Variable": "$.detail", "IsPresent": True, "Next": "ListMarkers" if marks else "NoJobOnGroup"},
            {"Variable": "$.sent", "IsPresent": True, "Next": "Continue"}]},
        "Begin": {"Type": "Pass", "Result": document_name, "ResultPath": "$.documentName", "Next": "ReadGroup"},
        "Continue": {"Type": "Pass", "Result": document_name, "ResultPath": "$.documentName",
                     "Next": "MarkBody" if marks else "WatchReadGroup"},
        "NoJobOnGroup": {"Type": "Succeed"},
    }


def continue_states() -> dict[str, Document]:
    """Count the watch's polls; at `pollsPerExecution` start the next generation and end."""
    return {
        "CountPoll": {"Type": "Pass", "Parameters": {"value.$": "States.MathAdd($.polls, 1)"}, "ResultPath": "$.tick",
                      "Next": "SetPolls"},
        "SetPolls": {"Type": "Pass", "InputPath": "$.tick.value", "ResultPath": "$.polls", "Next": "HistoryLeft"},
        "HistoryLeft": {"Type": "Choice", "Default": "WatchReadGroup", "Choices": [
            {"Variable": "$.polls", "NumericGreaterThanEqualsPath": "$.pollsPerExecution", "Next": "NextGeneration"}]},
        "NextGeneration": {"Type": "Pass", "ResultPath": "$.next", "Next": "StartNextGeneration", "Parameters": {
            **_continuation("$"), "generation.$": "States.MathAdd($.generation, 1)", "polls": 0}},
        "StartNextGeneration": task("sfn:startExecution", {
            "StateMachineArn.$": "$$.StateMachine.Id", "Input.$": "States.JsonToString($.next)",
            "Name.$": "States.Format('{}-g{}', $.job.jobId, $.next.generation)"}, "Continued",
            ResultSelector={"continuedAs.$": "$.ExecutionArn"}, ResultPath="$.continued"),
        "Continued": {"Type": "Pass", "InputPath": "$.continued", "End": True},
    }


def marker_states(bucket: str, jobs_prefix: str) -> dict[str, Document]:
    """The job's marker: this execution and what a continuation needs, after each send and continuation."""
    return {
        "MarkBody": {"Type": "Pass", "ResultPath": "$.marker", "Next": "Mark", "Parameters": {
            **_continuation("$"), "generation.$": "$.generation", "execution.$": "$$.Execution.Id"}},
        "Mark": task("s3:putObject", {
            "Bucket": bucket, "Key.$": _marker_key_of_job(jobs_prefix),
            "Body.$": "States.JsonToString($.marker)", "ContentType": "application/json"}, "WatchReadGroup",
            ResultPath=None),
        "Forget": {"Type": "Task", "Resource": f"{SDK}s3:deleteObject", "ResultPath": None, "Next": "Publish",
                   "Parameters": {"Bucket": bucket, "Key.$": _marker_key_of_job(jobs_prefix)},
                   "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.forgetError", "Next": "Publish"}]},
    }


def node_left_states(bucket: str, jobs_prefix: str) -> dict[str, Document]:
    """An instance left a group: continue each of the group's jobs whose supervision died. A
    group without markers is told by ListObjectsV2's answer having no `Contents` (a path that
    selects nothing is States.Runtime, which no Catch takes: Step Functions developer guide,
    "Error handling in Step Functions"; read 2026-11-28); a marker that cannot be read, or whose
    job's continuation already started, ends that job's branch quietly."""
    gone = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.notFound", "Next": "NotThisJob"}]
    cancel = {"Type": "Task", "Resource": f"{SDK}ssm:cancelCommand", "Parameters": {"CommandId.$": "$.commandId"},
              "ResultPath": None, "End": True,
              "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.notCancelled", "Next": "Ended"}]}
    each_marker = {
        "ReadMarker": {"Type": "Task", "Resource": f"{SDK}s3:getObject", "Next": "ReadSupervision", "Catch": gone,
                       "Parameters": {"Bucket": bucket, "Key.$": "$.key"},
                       "ResultSelector": {"marker.$": "States.StringToJson($.Body)"}, "ResultPath": "$.found"},
        "ReadSupervision": {"Type": "Task", "Resource": f"{SDK}sfn:describeExecution", "Next": "SupervisionDied",
                            "Parameters": {"ExecutionArn.$": "$.found.marker.execution"}, "Catch": gone,
                            "ResultSelector": {"status.$": "$.Status"}, "ResultPath": "$.supervision"},
        "SupervisionDied": {"Type": "Choice", "Default": "NotThisJob", "Choices": [
            {"Or": [{"Variable": "$.supervision.status", "StringEquals": status} for status in ("FAILED", "TIMED_OUT")],
             "Next": "CancelDeadAttempt"}]},
        "CancelDeadAttempt": {
            "Type": "Map", "ItemsPath": "$.found.marker.sent", "ResultPath": None, "Next": "ResumeInput", "Catch": gone,
            "ItemSelector": {"commandId.$": "$$.Map.Item.Value.commandId"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Cancel",
                              "States": {"Cancel": cancel, "Ended": {"Type": "Pass", "End": True}}}},
        "ResumeInput": {"Type": "Pass", "ResultPath": "$.resumed", "Next": "Resume", "Parameters": {
            **_continuation("$.found.marker"), "generation.$": "$.found.marker.generation", "polls": 0}},
        "Resume": {"Type": "Task", "Resource": f"{SDK}sfn:startExecution", "ResultPath": None, "End": True,
                   "Catch": gone,  # a second event of the same loss finds the continuation already started
                   "Parameters": {"StateMachineArn.$": "$.machine",
                                  "Name.$": "States.Format('{}-r{}', $.found.marker.job.jobId, $.instanceId)",
                                  "Input.$": "States.JsonToString($.resumed)"}},
        "NotThisJob": {"Type": "Pass", "End": True},
    }
    return {
        "ListMarkers": {"Type": "Task", "Resource": f"{SDK}s3:listObjectsV2", "Next": "AnyMarker",
                        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.notFound", "Next": "NoJobOnGroup"}],
                        "Parameters": {"Bucket": bucket, "Prefix.$": f"States.Format('{marker_folder(jobs_prefix)}', "
                                                                      "$.detail.AutoScalingGroupName)"},
                        "ResultPath": "$.markers"},
        "AnyMarker": {"Type": "Choice", "Default": "NoJobOnGroup", "Choices": [
            {"Variable": "$.markers.Contents", "IsPresent": True, "Next": "EachMarker"}]},
        "EachMarker": {
            "Type": "Map", "ItemsPath": "$.markers.Contents", "ResultPath": None, "Next": "NoJobOnGroup",
            "ItemSelector": {"key.$": "$$.Map.Item.Value.Key", "instanceId.$": "$.detail.EC2InstanceId",
                             "machine.$": "$$.StateMachine.Id"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "ReadMarker", "States": each_marker},
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.notFound", "Next": "NoJobOnGroup"}]},
    }
