"""What moto's Run Command lacks for executing the job supervisor's state machine, and only that.

moto runs no SSM Agent: every invocation it records is `Success` with code 0 at once. `Agents`
answers GetCommandInvocation from a script instead (`status(command id, instance id, calls)`, the
number of times that invocation was read, and `output(command id, instance id, parameters)`, the
command's stdout, cut to the 24,000 characters GetCommandInvocation returns), as the nodes' agents
would report a job's progress; the command, its instances and everything else stay moto's. moto
has no CancelCommand (moto 5.2.5,
`moto/ssm/responses.py`): `Agents` completes it against moto's command (its status becomes
`Cancelled`, and the cancel is recorded), so the state machine's `aws-sdk:ssm:cancelCommand` runs.
moto also adds every instance of the region to a command sent without Targets
(`Command._get_instance_ids_from_targets` with no filter); AWS sends it to the instances named,
and so does a command sent inside the block. moto's AWS SDK integration passes a task's
parameters to boto3 as written and returns boto3's answer; Step Functions takes and returns them
PascalCase for every service, its own camelCase API included (Step Functions developer guide,
"AWS SDK service integrations"; read 2026-11-28): for `aws-sdk:sfn:*` tasks the block converts
both ways with moto's own shape-based helpers (`_to_boto_request`, `_from_boto_response`), and
an S3 GetObject's streamed Body becomes its text and other services' timestamps (ListObjectsV2's
LastModified) ISO 8601 text, as Step Functions returns JSON. All four hold inside the block only.

Speed only: moto parses a definition with its ANTLR grammar on CreateStateMachine and again on
every StartExecution (`AmazonStateLanguageParser.parse`, about 2 s for the supervisor's). Inside
the block the syntax tree of a definition is parsed once per process and kept; each parse still
builds a fresh program from it (moto's `Preprocessor`), so no execution shares another's states;
CreateStateMachine checks a definition only the first time (the check builds a program it drops);
and a JSONPath (`$.pollSeconds`) is parsed once per process, not on each state that reads it
(jsonpath_ng builds its PLY lexer and parser anew on each `parse`: a quarter of an execution's CPU).
The interpreter copies the state's data on every read and write of a path (`copy.deepcopy`, whose
memo of every object it met costs most of an execution's CPU on the JSON it copies); inside the
block its hot paths copy JSON by type instead (`_json_copy`), and anything else as before.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import threading
import types
from collections.abc import Callable, Iterator
from unittest import mock

from moto.core.config import default_user_config

Status = Callable[[str, str, int], tuple[str, int]]
Output = Callable[[str, str, dict], "str | None"]
NOT_YET = "InvocationDoesNotExist"
"""A status the script may answer: the node's agent has not got the command yet, so SSM answers
GetCommandInvocation with that error (SSM API reference, GetCommandInvocation, Errors), as JSON:
moto's own is an XML RESTError (moto 5.2.5 `Command.get_invocation`), which its Step Functions
interpreter reads as no error name at all and fails the execution with."""
STDOUT_LIMIT = 24000
"""GetCommandInvocation's `StandardOutputContent`: the first 24,000 characters of stdout (SSM API
reference, GetCommandInvocation; read 2026-11-28)."""


_TREES: dict[str, object] = {}
"""The ANTLR syntax tree of each definition parsed inside the block, by its text."""


def _parsed_once(parse: Callable[[str], tuple]) -> Callable[[str], tuple]:
    """moto's `AmazonStateLanguageParser.parse`, with the syntax tree parsed once per definition
    and a fresh program built from it on each call."""
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    def parsed(definition: str) -> tuple:
        if (tree := _TREES.get(definition)) is None:
            program, _TREES[definition] = parse(definition)
            return program, _TREES[definition]
        return Preprocessor().visit(tree), tree

    return parsed


@functools.cache
def _json_path(path: str):
    """moto's JSONPath reads (`asl.utils.json_path.extract_json`: jsonpath_ng's extended parser)."""
    from jsonpath_ng.ext import parse

    return parse(path)


@functools.cache
def _result_path(path: str):
    """moto's ResultPath writes (`asl.component.common.path.result_path`: jsonpath_ng's parser)."""
    from jsonpath_ng import parse

    return parse(path)


def _json_copy(value, memo=None):
    """`copy.deepcopy` of JSON (dicts, lists, text, numbers, booleans, None) without its memo;
    any other value, or a call with a memo, is `copy.deepcopy`'s."""
    kind = type(value)
    if kind is dict and memo is None:
        return {key: _json_copy(item) for key, item in value.items()}
    if kind is list and memo is None:
        return [_json_copy(item) for item in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    return copy.deepcopy(value, memo)


_JSON_COPY = types.SimpleNamespace(deepcopy=_json_copy, copy=copy.copy)
"""What the interpreter's hot paths see as their `copy` module inside the block."""
_COPYING_MODULES = ("moto.stepfunctions.parser.asl.eval.states",
                    "moto.stepfunctions.parser.asl.component.common.string.string_expression",
                    "moto.stepfunctions.parser.asl.component.state.exec.execute_state",
                    "moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map",
                    "moto.stepfunctions.parser.asl.component.common.path.result_path")
"""The modules whose `copy.deepcopy` of the state's data took most of an execution's CPU."""


def _validated_once(validate: Callable[[str], None]) -> Callable[[str], None]:
    """moto's CreateStateMachine check of a definition (`_validate_definition`, a parse whose program
    it drops), skipped for a definition whose tree is kept: that one parsed and built without error."""

    def validated(definition: str) -> None:
        if definition not in _TREES:
            validate(definition)

    return validated


class Agents:
    """The scripted SSM Agents of a test's nodes (see the module doc)."""

    def __init__(self, status: Status = lambda command, instance, calls: ("Success", 0),
                 output: Output = lambda command, instance, parameters: None):
        self.status = status
        self.output = output
        self.calls: dict[tuple[str, str], int] = {}
        self.cancelled: list[str] = []
        self.made: list[tuple[str, str, dict]] = []
        """(service, operation, parameters) of every AWS call the executions' tasks made, as the
        supervisor's role makes them (endpoint prefix and botocore operation name)."""
        self._lock = threading.Lock()

    def invocation(self, backend, command_id: str, instance_id: str, plugin_name: str | None = None) -> dict:
        command = backend.get_command_by_id(command_id)
        answer = dict(command.get_invocation(instance_id, plugin_name))
        with self._lock:
            key = (command_id, instance_id)
            self.calls[key] = self.calls.get(key, 0) + 1
            calls = self.calls[key]
        status, code = self.status(command_id, instance_id, calls)
        if status == NOT_YET:
            from moto.core.exceptions import JsonRESTError

            raise JsonRESTError("InvocationDoesNotExist", "the command has not reached the node's agent yet")
        answer |= {"Status": status, "StatusDetails": status, "ResponseCode": code}
        stdout = self.output(command_id, instance_id, dict(command.parameters)) if status in (
            "Success", "Failed", "Cancelled", "TimedOut") else None
        return answer | ({"StandardOutputContent": stdout[:STDOUT_LIMIT]} if stdout is not None else {})

    def cancel(self, backend, command_id: str) -> None:
        backend.get_command_by_id(command_id).status = "Cancelled"
        with self._lock:
            self.cancelled.append(command_id)


def _timestamps_as_text(value) -> None:
    """Replace every datetime inside `value` (dicts and lists, in place) by its ISO 8601 text."""
    import datetime

    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        if isinstance(item, datetime.datetime):
            value[key] = item.isoformat()
        else:
            _timestamps_as_text(item)


@contextlib.contextmanager
def executing_state_machines(agents: Agents) -> Iterator[Agents]:
    """moto's Step Functions executes state machines (`execute_state_machine`), with `agents` as
    the nodes' SSM Agents and CancelCommand."""
    from moto.ssm.models import SimpleSystemManagerBackend
    from moto.ssm.responses import SimpleSystemManagerResponse

    send_command = SimpleSystemManagerBackend.send_command

    def send_to_named_instances(backend, *arguments, **request):
        named = list(request["instance_ids"] or [])  # moto's Command extends this very list
        command = send_command(backend, *arguments, **request)
        command.instance_ids = named
        command.invocations = [item for item in command.invocations if item["InstanceId"] in named]
        command.completed_count = command.target_count = len(named)
        return command

    def get_command_invocation(backend, command_id, instance_id, plugin_name):
        return agents.invocation(backend, command_id, instance_id, plugin_name)

    def cancel_command(response):
        from moto.core.responses import EmptyResult

        agents.cancel(response.ssm_backend, response._get_param("CommandId"))
        return EmptyResult()

    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (
        StateTaskServiceAwsSdk,
    )

    def operation(task):
        import botocore.session

        model = botocore.session.get_session().get_service_model("stepfunctions")
        action = task.resource.api_action
        return model.operation_model(action[0].upper() + action[1:])

    def to_api(task, parameters, boto_service_name=None, service_action_name=None):
        if task._get_boto_service_name() == "stepfunctions":
            task._to_boto_request(parameters, operation(task).input_shape)

    def from_api(task, response, boto_service_name=None, service_action_name=None):
        if task._get_boto_service_name() == "stepfunctions":
            task._from_boto_response(response, operation(task).output_shape)
        if isinstance(response, dict) and hasattr(response.get("Body"), "read"):
            response["Body"] = response["Body"].read().decode("utf-8")
        _timestamps_as_text(response)

    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_aws_sdk,
        state_task_service_sns,
    )

    made_by = state_task_service_aws_sdk.boto_client_for
    made: dict[tuple[str, str], object] = {}

    def record(params, model, **_):
        with agents._lock:
            agents.made.append((model.service_model.endpoint_prefix, model.name, dict(params)))

    def recording_client(region: str, service: str, state_credentials=None):
        """moto's client of a task (the same fixed credentials for every task), one per region and
        service inside the block: moto made one per task, some 10 ms each (a poll of N nodes is N tasks)."""
        if (client := made.get((region, service))) is None:
            client = made_by(region=region, service=service, state_credentials=state_credentials)
            client.meta.events.register("provide-client-params", record)
            with agents._lock:
                client = made.setdefault((region, service), client)
        return client

    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    parse = staticmethod(_parsed_once(AmazonStateLanguageParser.parse))
    validate = staticmethod(_validated_once(StepFunctionsParserBackend._validate_definition))
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    json_copies = [mock.patch.object(importlib.import_module(name), "copy", _JSON_COPY) for name in _COPYING_MODULES]
    with contextlib.ExitStack() as copies, mock.patch.object(AmazonStateLanguageParser, "parse", parse), \
            mock.patch.object(StepFunctionsParserBackend, "_validate_definition", validate), \
            mock.patch.object(json_path, "parse", _json_path), mock.patch.object(result_path, "parse", _result_path), \
            mock.patch.object(state_task_service_aws_sdk, "boto_client_for", recording_client), \
            mock.patch.object(state_task_service_sns, "boto_client_for", recording_client), \
            mock.patch.dict(default_user_config, {"stepfunctions": {"execute_state_machine": True}}), \
            mock.patch.object(SimpleSystemManagerBackend, "send_command", send_to_named_instances), \
            mock.patch.object(SimpleSystemManagerBackend, "get_command_invocation", get_command_invocation), \
            mock.patch.object(SimpleSystemManagerResponse, "cancel_command", cancel_command, create=True), \
            mock.patch.object(StateTaskServiceAwsSdk, "_normalise_parameters", to_api), \
            mock.patch.object(StateTaskServiceAwsSdk, "_normalise_response", from_api):
        for json_copy in json_copies:
            copies.enter_context(json_copy)
        yield agents
