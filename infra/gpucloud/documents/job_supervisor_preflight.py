"""The job supervisor's preflight: a first round of the input's level on every node of the job, and
when a node fails it, the search for the culprit, in the same states the rest of a job uses.

After each round, each node's output is kept in the job record (with a write prefix:
`<jobs prefix><job id>/preflight/attempt-<a>/try-<t>/round-<r>/<instance id>.txt`, the node's JSON
result after its RESULT_MARKER, which `run` prints). After a round that did not pass everywhere,
the round's exit statuses go to the job's
first node as `preflight-decide` (node/preflight_search.py `decide`). Its stdout is the verdict
JSON, read back through GetCommandInvocation's `StandardOutputContent` (the first 24,000
characters of a command's stdout; SSM API reference, GetCommandInvocation; read 2026-11-28) and
parsed with `States.StringToJson`:

- `pass`: the job starts; `test`: a Map state sends `preflight-fabric` to each set of the next
  round at once (each set its own command; Step Functions developer guide, "Map state": one
  iteration per item of `ItemsPath`, the results an array in the items' order, and an iteration
  that fails fails the Map state; read 2026-11-28), and the round's statuses go to
  `preflight-decide` again. A set whose send Run Command refuses ends its own iteration instead
  (documents/job_supervisor_sends.py REFUSED), so that the sets already sent are cancelled
  before the job ends `error` with Run Command's reason;
- `replace`: each named node gets `preflight-replace` (it marks itself Unhealthy through Auto
  Scaling's SetInstanceHealth, within its group's `maxReplacementsPerHour` breaker: node/replace.py);
  once every one has left service the job waits for N nodes again and tests the new set, at most
  MAX_REPLACEMENT_ROUNDS times;
- `stop`, a breaker that held a replacement, or a culprit still named after the last round: the job
  ends `preflight-failed` with the reason, published to the stack's topic.

The decide step's input is `States.Base64Encode` of a JSON argv (its `commandB64`), whose input may
be 10,000 characters (Step Functions developer guide, "Intrinsic functions", States.Base64Encode;
moto 5.2.5 enforces the same, `Base64Encode.MAX_INPUT_CHAR_LEN`; read 2026-11-28): a round costs
some 28 characters a node tested (`search_rounds`), so five rounds fit up to 60 nodes, one up to
191. Intrinsics are used only where that guide allows them (Pass `Parameters`, Task `Parameters`
and `ResultSelector`, Map `ResultSelector`), nested at most 10 deep.
"""

from __future__ import annotations

import json

from gpucloud.documents.job_supervisor_sends import REFUSED, SENDING, refusal_states, send_states, sent_or_not
from gpucloud.documents.job_supervisor_states import (
    DELIVERY_TIMEOUT_SECONDS,
    SDK,
    TERMINAL,
    Document,
    describe_group,
    end_state,
    in_service_ids,
    task,
    watch_states,
)

BASE64_INPUT_LIMIT = 10000
"""The most characters `States.Base64Encode` takes (see the module doc)."""
INSTANCE_ID_CHARACTERS = 19
"""`i-` and 17 hexadecimal digits (EC2 API reference, "Resource IDs"; read 2026-11-28)."""
LONGEST_EXIT_STATUS = 255
"""The longest exit status a tested node reports in a round's `<instance id>=<status>`: three
digits (the node's preflight exits 124 when a step times out: node/preflight.py EXIT_TIMEOUT),
one longer than the -1 of a node that reported none."""
MAX_ROUNDS = 5
"""node/preflight_search.py MAX_ROUNDS, which documents may not import (held equal by
tests/node/test_preflight_decide.py)."""
MAX_REPLACEMENT_ROUNDS = 2
"""New node sets tested after replacing culprits before the preflight gives up (as `gpucloud
preflight`: ops/preflight_run.py MAX_REPLACEMENTS)."""
ROUND_ACTION = "preflight-fabric"


def decide_argv(instance_ids: list[str], rounds: list[list[str]]) -> str:
    """The text `States.Base64Encode` gets in `PreflightDecideParameters`: the JSON argv of the
    decide step, with the ids and each round's statuses as JSON text inside it, each written as
    `States.JsonToString` writes JSON (without spaces)."""
    def text(value) -> str:
        return json.dumps(value, separators=(",", ":"))

    return text(["--instance-ids", text(instance_ids), "--rounds", f"[{','.join(map(text, rounds))}]"])


def search_rounds(nodes: int) -> int:
    """How many rounds of `nodes` nodes the decide step's input holds within BASE64_INPUT_LIMIT, at
    most MAX_ROUNDS: measured on the longest input, every node tested in every round, each id of
    INSTANCE_ID_CHARACTERS and each status LONGEST_EXIT_STATUS."""
    ids = [f"i-{index:0{INSTANCE_ID_CHARACTERS - 2}x}" for index in range(nodes)]
    statuses = [f"{instance}={LONGEST_EXIT_STATUS}" for instance in ids]
    rounds = 0
    while rounds < MAX_ROUNDS and len(decide_argv(ids, [statuses] * (rounds + 1))) <= BASE64_INPUT_LIMIT:
        rounds += 1
    return rounds


def _send(parameters: str, instance_ids: str, comment: str, result_path: str, next_state: str,
          document_name: str, log_group_name: str, catch: bool = True) -> Document:
    state = task(
        "ssm:sendCommand",
        {"DocumentName": document_name, "InstanceIds.$": instance_ids, "Parameters.$": parameters,
         "Comment.$": comment, "TimeoutSeconds": DELIVERY_TIMEOUT_SECONDS,
         "CloudWatchOutputConfig": {"CloudWatchLogGroupName": log_group_name, "CloudWatchOutputEnabled": True}},
        next_state, ResultSelector={"commandId.$": "$.Command.CommandId"}, ResultPath=result_path)
    if not catch:
        state.pop("Catch")  # inside a Map iteration: the Map's own Catch takes it
    return state


def _await_command(prefix: str, command: str, instance: str, result_path: str, on_end: str,
                   catch_to: str, error_path: str = "$.error") -> dict[str, Document]:
    """Poll one invocation until it ended; its status, code and stdout at `result_path`; another
    error than a missing invocation goes to `catch_to` at `error_path`."""
    return {
        f"{prefix}Read": {
            "Type": "Task", "Resource": f"{SDK}ssm:getCommandInvocation", "Next": f"{prefix}Ended",
            "Parameters": {"CommandId.$": command, "InstanceId.$": instance},
            "ResultSelector": {"status.$": "$.Status", "code.$": "$.ResponseCode", "out.$": "$.StandardOutputContent"},
            "ResultPath": result_path,
            # InvocationDoesNotExist until the node's agent has the command
            "Catch": [{"ErrorEquals": ["States.TaskFailed"], "ResultPath": f"{result_path}Missing",
                       "Next": f"{prefix}Wait"}, {"ErrorEquals": ["States.ALL"], "ResultPath": error_path,
                                                  "Next": catch_to}]},
        f"{prefix}Ended": {"Type": "Choice", "Default": f"{prefix}Wait", "Choices": [
            {"Or": [{"Variable": f"{result_path}.status", "StringEquals": status} for status in TERMINAL],
             "Next": on_end}]},
        f"{prefix}Wait": {"Type": "Wait", "SecondsPath": "$.pollSeconds", "Next": f"{prefix}Read"},
    }


def _figures(name: str, bucket: str | None, jobs_prefix: str | None, next_state: str) -> dict[str, Document]:
    """Each node's output of the round, kept in the job record (best effort: a failed write is no
    reason to stop the job)."""
    if not (bucket and jobs_prefix):
        return {name: {"Type": "Pass", "Next": next_state}}
    key = (f"States.Format('{jobs_prefix}{{}}/preflight/attempt-{{}}/try-{{}}/round-{{}}/{{}}.txt', $.jobId, "
           "$.attempt, $.try, $.round, $.instanceId)")
    node = {"StartAt": "Output", "States": {
        "Output": {"Type": "Task", "Resource": f"{SDK}ssm:getCommandInvocation", "Next": "Keep",
                   "Parameters": {"CommandId.$": "$.commandId", "InstanceId.$": "$.instanceId"},
                   "ResultSelector": {"out.$": "$.StandardOutputContent"}, "ResultPath": "$.invocation"},
        "Keep": {"Type": "Task", "Resource": f"{SDK}s3:putObject", "End": True, "ResultPath": None,
                 "Parameters": {"Bucket": bucket, "Key.$": key, "Body.$": "$.invocation.out",
                                "ContentType": "text/plain"}}}}
    nodes = {"Type": "Map", "ItemsPath": "$.instanceIds", "End": True,
             "ItemSelector": {"commandId.$": "$.commandId", "instanceId.$": "$$.Map.Item.Value", "jobId.$": "$.jobId",
                              "attempt.$": "$.attempt", "try.$": "$.try", "round.$": "$.round"},
             "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, **node}}
    return {name: {
        "Type": "Map", "ItemsPath": "$.sent", "ResultPath": None, "Next": next_state,
        "ItemSelector": {"commandId.$": "$$.Map.Item.Value.commandId", "instanceIds.$": "$$.Map.Item.Value.instanceIds",
                         "jobId.$": "$.job.jobId", "attempt.$": "$.attempt", "try.$": "$.preflightTry",
                         "round.$": "$.search.round"},
        "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Nodes", "States": {"Nodes": nodes}},
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.figuresError", "Next": next_state}]}}


def _decide_states(document_name: str, log_group_name: str) -> dict[str, Document]:
    """Append the round's statuses, send them to the first node's `preflight-decide`, read its verdict."""
    argv = ("States.Base64Encode(States.JsonToString(States.Array('--instance-ids', "
            "States.JsonToString($.chosen.instanceIds), '--rounds', States.Format('[{}]', $.search.rounds))))")
    first = "States.Array(States.ArrayGetItem($.chosen.instanceIds, 0))"
    return {
        "PreflightDigest": {"Type": "Choice", "Default": "PreflightMoreRounds", "Choices": [
            {"Variable": "$.search.rounds", "StringEquals": "", "Next": "PreflightFirstRound"}]},
        "PreflightFirstRound": {"Type": "Pass", "ResultPath": "$.search", "Next": "PreflightRoundsLeft",
                                "Parameters": {"rounds.$": "States.JsonToString($.watch.digest)",
                                               "round.$": "States.MathAdd($.search.round, 1)"}},
        "PreflightMoreRounds": {"Type": "Pass", "ResultPath": "$.search", "Next": "PreflightRoundsLeft",
                                "Parameters": {
                                    "rounds.$": "States.Format('{},{}', $.search.rounds, States.JsonToString($.watch.digest))",
                                    "round.$": "States.MathAdd($.search.round, 1)"}},
        # A search that outgrows what the decide step's input holds would fail States.Base64Encode
        # with States.Runtime, which no Catch takes: it ends here, through the topic.
        "PreflightRoundsLeft": {"Type": "Choice", "Default": "PreflightDecideParameters", "Choices": [
            {"Variable": "$.search.round", "NumericGreaterThanPath": "$.preflightRounds", "Next": "PreflightTooLarge"}]},
        "PreflightTooLarge": end_state(
            "preflight-failed", "job {}: the preflight failed on attempt {}, and a search on {} nodes holds {} rounds "
            "in the supervisor: run gpucloud preflight on the group, which searches from your machine",
            "$.job.jobId", "$.attempt", "$.job.nodes", "$.preflightRounds"),
        "PreflightDecideParameters": {"Type": "Pass", "ResultPath": "$.parameters", "Next": "PreflightDecide",
                                      "Parameters": {"action": ["preflight-decide"], "job.$": "States.Array($.job.jobId)",
                                                     "nodes.$": "States.Array($.join.text)",
                                                     "commandB64.$": f"States.Array({argv})"}},
        "PreflightDecide": _send("$.parameters", first,
                                 "States.Format('gpucloud job {} preflight-decide {}', $.job.jobId, $.attempt)",
                                 "$.decide", "PreflightDecideRead", document_name, log_group_name),
        **_await_command("PreflightDecide", "$.decide.commandId", "States.ArrayGetItem($.chosen.instanceIds, 0)",
                         "$.decided", "PreflightDecided", "SupervisorError"),
        # A verdict that is no JSON object would stop the execution with States.Runtime, which no
        # Catch takes, before the topic hears of it: it ends the job here instead.
        "PreflightDecided": {"Type": "Choice", "Default": "PreflightDecideFailed", "Choices": [
            {"And": [{"Variable": "$.decided.status", "StringEquals": "Success"},
                     {"Variable": "$.decided.out", "StringMatches": "{*}"}], "Next": "PreflightDecision"}]},
        "PreflightDecideFailed": end_state(
            "preflight-failed", "job {}: the preflight failed on attempt {} and its decide step on the first node ended "
            "{} (exit {}) without a verdict: see the job log group", "$.job.jobId", "$.attempt", "$.decided.status",
            "$.decided.code"),
        "PreflightDecision": {"Type": "Pass", "ResultPath": "$.verdict", "Next": "PreflightAction",
                             "Parameters": {"value.$": "States.StringToJson($.decided.out)"}},
        "PreflightAction": {"Type": "Choice", "Default": "PreflightStopped", "Choices": [
            {"Variable": "$.verdict.value.action", "StringEquals": action, "Next": state}
            for action, state in (("pass", "PreflightPassed"), ("test", "PreflightRound"),
                                  ("replace", "PreflightCanReplace"))]},
        "PreflightStopped": end_state("preflight-failed", "job {}: the preflight stopped on attempt {}: {} {}",
                                      "$.job.jobId", "$.attempt", "$.verdict.value.reason",
                                      "States.JsonToString($.verdict.value.culprits)"),
    }


def _round_states(document_name: str, log_group_name: str) -> dict[str, Document]:
    """The sets of the verdict, each sent `preflight-fabric` with its own `nodes`, all at once."""
    parameters = {"action": [ROUND_ACTION], "job.$": "States.Array($.job.jobId)", "nodes.$": "States.Array($.set.nodes)",
                  "attempt.$": "States.Array(States.Format('{}', $.attempt))",
                  **{f"{name}.$": f"States.Array($.job.launch.{name})" for name in ("port", "gpusPerNode", "image")}}
    each = {"StartAt": "Parameters", "States": {
        "Parameters": {"Type": "Pass", "Parameters": parameters, "ResultPath": "$.parameters", "Next": "Send"},
        "Send": _send("$.parameters", "$.set.instanceIds",
                      f"States.Format('gpucloud job {{}} {ROUND_ACTION} {{}}', $.job.jobId, $.attempt)",
                      "$.command", "Sent", document_name, log_group_name, catch=False) | {"Catch": REFUSED},
        **sent_or_not("$.set.instanceIds")}}
    return {
        "PreflightRound": {
            "Type": "Map", "ItemsPath": "$.verdict.value.sets", "ResultSelector": SENDING, "ResultPath": "$.sending",
            "Next": "PreflightRoundRefused",
            "ItemSelector": {"set.$": "$$.Map.Item.Value", "job.$": "$.job", "attempt.$": "$.attempt"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, **each},
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}]},
        **refusal_states("PreflightRound", "PreflightRoundReadGroup"),
        **watch_states("PreflightRound", on_ok="PreflightFigures", on_failed="PreflightFigures"),
    }


def _replace_states(document_name: str, log_group_name: str) -> dict[str, Document]:
    """`preflight-replace` to each culprit, then wait for them to leave service and pick a new set."""
    replace_one = {"StartAt": "Parameters", "States": {
        "Parameters": {"Type": "Pass", "ResultPath": "$.parameters", "Next": "Send", "Parameters": {
            "action": ["preflight-replace"], "job.$": "States.Array($.jobId)",
            "commandB64.$": "States.Array($.culprit.commandB64)"}},
        "Send": _send("$.parameters", "States.Array($.culprit.instanceId)",
                      "States.Format('gpucloud job {} preflight-replace', $.jobId)", "$.command",
                      "ReplaceRead", document_name, log_group_name, catch=False),
        **_await_command("Replace", "$.command.commandId", "$.culprit.instanceId", "$.replaced", "Replaced", "Held",
                         "$.replaceError"),
        "Replaced": {"Type": "Choice", "Default": "Held", "Choices": [
            {"Variable": "$.replaced.status", "StringEquals": "Success", "Next": "Gone"}]},
        "Gone": {"Type": "Pass", "End": True, "Parameters": {"tag": "replaced", "instanceId.$": "$.culprit.instanceId"}},
        "Held": {"Type": "Pass", "End": True, "Parameters": {"tag": "held", "instanceId.$": "$.culprit.instanceId"}}}}
    leaving = {"Type": "Map", "ItemsPath": "$.verdict.value.replace", "ResultPath": "$.leaving",
               "Next": "PreflightStillLeaving",
               "ItemSelector": {"instanceId.$": "$$.Map.Item.Value.instanceId", "inService.$": "$.inService.ids"},
               "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Present", "States": {
                   "Present": {"Type": "Pass", "Next": "Tag", "ResultPath": "$.present",
                               "Parameters": {"value.$": "States.ArrayContains($.inService, $.instanceId)"}},
                   "Tag": {"Type": "Choice", "Default": "Out", "Choices": [
                       {"Variable": "$.present.value", "BooleanEquals": True, "Next": "In"}]},
                   "In": {"Type": "Pass", "End": True, "Result": "in"},
                   "Out": {"Type": "Pass", "End": True, "Result": "out"}}},
               "ResultSelector": {"tags.$": "$[*]"}}
    return {
        "PreflightCanReplace": {"Type": "Choice", "Default": "PreflightReplace", "Choices": [
            {"Variable": "$.preflightTry", "NumericGreaterThanEquals": MAX_REPLACEMENT_ROUNDS,
             "Next": "PreflightOutOfReplacements"}]},
        "PreflightOutOfReplacements": end_state(
            "preflight-failed", "job {}: the preflight still names a culprit after {} replacement rounds on attempt {}: {}",
            "$.job.jobId", str(MAX_REPLACEMENT_ROUNDS), "$.attempt", "States.JsonToString($.verdict.value.culprits)"),
        "PreflightReplace": {
            "Type": "Map", "ItemsPath": "$.verdict.value.replace", "Next": "PreflightAnyHeld",
            "ItemSelector": {"culprit.$": "$$.Map.Item.Value", "pollSeconds.$": "$.pollSeconds",
                             "jobId.$": "$.job.jobId"},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, **replace_one},
            "ResultSelector": {"tags.$": "$[*].tag"}, "ResultPath": "$.replacing",
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "SupervisorError"}]},
        "PreflightAnyHeld": {"Type": "Pass", "ResultPath": "$.held", "Next": "PreflightHeldChoice",
                             "Parameters": {"value.$": "States.ArrayContains($.replacing.tags, 'held')"}},
        "PreflightHeldChoice": {"Type": "Choice", "Default": "PreflightLeftWaiting", "Choices": [
            {"Variable": "$.held.value", "BooleanEquals": True, "Next": "PreflightHeld"}]},
        "PreflightHeld": end_state(
            "preflight-failed", "job {}: the preflight named {} and the replacement breaker of its group "
            "(health.maxReplacementsPerHour) held back replacing it; the job stops on attempt {}", "$.job.jobId",
            "States.JsonToString($.verdict.value.culprits)", "$.attempt"),
        "PreflightLeftWaiting": {"Type": "Pass", "Result": 0, "ResultPath": "$.waited", "Next": "PreflightLeftGroup"},
        **describe_group("PreflightLeftGroup", "PreflightLeftInService"),
        "PreflightLeftInService": in_service_ids("$.inService", "PreflightLeaving"),
        "PreflightLeaving": leaving,
        "PreflightStillLeaving": {"Type": "Pass", "ResultPath": "$.leaving", "Next": "PreflightLeft",
                                  "Parameters": {"any.$": "States.ArrayContains($.leaving.tags, 'in')"}},
        "PreflightLeft": {"Type": "Choice", "Default": "PreflightNextTry", "Choices": [
            {"And": [{"Variable": "$.leaving.any", "BooleanEquals": True},
                     {"Variable": "$.waited", "NumericLessThanPath": "$.nodeTimeout"}], "Next": "PreflightLeftWait"},
            {"Variable": "$.leaving.any", "BooleanEquals": True, "Next": "PreflightNotLeft"}]},
        "PreflightLeftWait": {"Type": "Wait", "SecondsPath": "$.pollSeconds", "Next": "PreflightLeftTick"},
        "PreflightLeftTick": {"Type": "Pass", "ResultPath": "$.tick", "Next": "PreflightLeftCount",
                              "Parameters": {"value.$": "States.MathAdd($.waited, States.MathAdd($.pollSeconds, 1))"}},
        "PreflightLeftCount": {"Type": "Pass", "InputPath": "$.tick.value", "ResultPath": "$.waited",
                               "Next": "PreflightLeftGroup"},
        "PreflightNotLeft": end_state(
            "preflight-failed", "job {}: the nodes the preflight named ({}) were marked Unhealthy but still in service "
            "after {} s; the job stops on attempt {}", "$.job.jobId", "States.JsonToString($.verdict.value.culprits)",
            "$.nodeTimeout", "$.attempt"),
        "PreflightNextTry": {"Type": "Pass", "ResultPath": "$.tick", "Next": "PreflightSetTry",
                             "Parameters": {"value.$": "States.MathAdd($.preflightTry, 1)"}},
        "PreflightSetTry": {"Type": "Pass", "InputPath": "$.tick.value", "ResultPath": "$.preflightTry",
                            "Next": "StartWaiting"},
    }


def preflight_states(document_name: str, log_group_name: str, bucket: str | None,
                     jobs_prefix: str | None) -> dict[str, Document]:
    """From `PreflightWanted` (after the nodes are picked) to `LaunchParameters` or the job's end."""
    return {
        "PreflightWanted": {"Type": "Choice", "Default": "PreflightBegin",
                            "Choices": [{"Variable": "$.preflight", "StringEquals": "off", "Next": "LaunchParameters"}]},
        "PreflightBegin": {"Type": "Pass", "ResultPath": "$.search", "Result": {"rounds": "", "round": 0},
                           "Next": "PreflightParameters"},
        **send_states("Preflight", document_name, log_group_name, "preflight", "PreflightReadGroup"),
        **watch_states("Preflight", on_ok="PreflightPassedFigures", on_failed="PreflightFigures"),
        **_figures("PreflightPassedFigures", bucket, jobs_prefix, "PreflightPassed"),
        **_figures("PreflightFigures", bucket, jobs_prefix, "PreflightDigest"),
        **_decide_states(document_name, log_group_name),
        **_round_states(document_name, log_group_name),
        **_replace_states(document_name, log_group_name),
        "PreflightPassed": {"Type": "Pass", "Result": 0, "ResultPath": "$.preflightTry", "Next": "LaunchParameters"},
    }
