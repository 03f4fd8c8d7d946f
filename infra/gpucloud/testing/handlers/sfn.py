"""Step Functions state machines (the job supervisor)."""

from __future__ import annotations

import functools
import json
import re

from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, refused, resource

NAME = re.compile(r"^[0-9A-Za-z_-]{1,80}$")
"""State machine names: 1-80 of letters, digits, `-` and `_` (terraform-provider-aws
internal/service/sfn/state_machine.go, `name`; read 2026-11-28)."""
DEFINITION_MAX = 1024 * 1024
"""The definition is at most 1 MiB (same file, `definition`: StringLenBetween(0, 1048576))."""
TYPES = ("STANDARD", "EXPRESS")
LOG_LEVELS = ("ALL", "ERROR", "FATAL", "OFF")
"""`type` and `logging_configuration.level` (same file: the SDK's StateMachineType and LogLevel enums)."""


def _invalid(code: str, message: str):
    return refused("CreateStateMachine", code, message)


TERMINAL_TYPES = ("Choice", "Succeed", "Fail")
"""States that take no `Next` nor `End`: every other state must have exactly one of them (Amazon
States Language specification, "Transitions": "All non-terminal states MUST have a Next field,
except for the Choice state", and a state with `"End": true` is terminal; read 2026-11-28)."""


def _transition_problems(machine: dict) -> list[str]:
    problems = []
    for name, state in (machine.get("States") or {}).items():
        if state.get("Type") not in TERMINAL_TYPES and ("Next" in state) == (state.get("End") is True):
            problems.append(f"state {name} must have exactly one of Next and End: true")
        if state.get("Type") == "Map":
            problems += _transition_problems(state.get("ItemProcessor") or state.get("Iterator") or {})
    return problems


@functools.lru_cache(maxsize=32)
def asl_parse_error(definition: str) -> str | None:
    """moto's ASL parser's verdict on a definition (the repr of its error, or None), kept per text:
    the job supervisor's definition takes about 3 s to parse, and every plan of a stack creates it."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser, ASLParserException
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    try:
        tree = _parsed_in_sll_mode(definition)
        if tree is None:
            AmazonStateLanguageParser.parse(definition)
        else:
            Preprocessor().visit(tree)
    except (ValueError, ASLParserException) as error:
        return repr(error)
    return None


def _parsed_in_sll_mode(definition: str):
    """The tree moto's parser (`AmazonStateLanguageParser.parse`) builds, from ANTLR's faster SLL
    prediction, or None where that prediction stops at an error, real or not: the full LL parse
    then decides, with its own error messages. An SLL parse that ends without error is the LL parse
    (antlr4-python3-runtime, antlr4/atn/PredictionMode.py, SLL: "the parser will either return a correct parse tree (i.e.
    the same parse tree that would be returned with the LL prediction mode), or it will report a
    syntax error"; read 2026-11-29). A third less CPU for each new definition (0.54 -> 0.36 s)."""
    from antlr4 import CommonTokenStream, InputStream
    from antlr4.atn.PredictionMode import PredictionMode
    from antlr4.error.Errors import ParseCancellationException
    from antlr4.error.ErrorStrategy import BailErrorStrategy
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLLexer import ASLLexer
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser

    parser = ASLParser(CommonTokenStream(ASLLexer(InputStream(definition))))
    parser.removeErrorListeners()
    parser._interp.predictionMode = PredictionMode.SLL
    parser._errHandler = BailErrorStrategy()
    try:
        return parser.state_machine()
    except ParseCancellationException:
        return None


def check_definition(definition: str) -> None:
    """What Step Functions checks of a definition at CreateStateMachine and moto's default backend
    does not: it parses as the Amazon States Language (moto's own ASL parser decides, the
    interpreter its `execute_state_machine` mode runs, as it does in that mode:
    moto/stepfunctions/parser/models.py, `_validate_definition`), and each state other than a
    Choice, Succeed or Fail goes on or ends (TERMINAL_TYPES), which that parser does not check."""
    if len(definition.encode("utf-8")) > DEFINITION_MAX:
        raise _invalid("InvalidDefinition", f"the definition is {len(definition.encode('utf-8'))} bytes, above 1 MiB")
    try:
        machine = json.loads(definition)
    except ValueError as error:
        raise _invalid("InvalidDefinition", f"Invalid State Machine Definition: {error!r}") from None
    refused = asl_parse_error(definition)
    if refused:
        raise _invalid("InvalidDefinition", f"Invalid State Machine Definition: {refused}")
    problems = _transition_problems(machine)
    if problems:
        raise _invalid("InvalidDefinition", f"Invalid State Machine Definition: {'; '.join(problems)}")


def _logging(account: Account, logging: dict | None) -> dict | None:
    """A logging level other than OFF needs a destination: an existing log group's ARN with `:*`
    (Step Functions API reference, LoggingConfiguration and CloudWatchLogsLogGroup `logGroupArn`;
    read 2026-11-28)."""
    if not logging:
        return None
    level = logging.get("level") or "OFF"
    if level not in LOG_LEVELS:
        raise _invalid("ValidationException", f"logging level {level!r} is not one of {', '.join(LOG_LEVELS)}")
    destination = logging.get("logDestination")
    if level != "OFF":
        if not destination or not destination.endswith(":*"):
            raise _invalid("InvalidLoggingConfiguration", f"logging level {level} needs a log group ARN ending in ':*', "
                           f"got {destination!r}")
        name = destination.removesuffix(":*").split(":log-group:", 1)[-1]
        found = account.client("logs").describe_log_groups(logGroupNamePrefix=name)["logGroups"]
        if not any(group["logGroupName"] == name for group in found):
            raise _invalid("InvalidLoggingConfiguration", f"log group {name} does not exist")
    return drop_none({"level": level, "includeExecutionData": bool(logging.get("includeExecutionData")),
                      "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": destination}}] if destination else None})


@resource("aws:sfn/stateMachine:StateMachine")
def create_state_machine(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = request.physical_name()
    if not NAME.match(name):
        raise _invalid("InvalidName", f"state machine name {name!r}: 1-80 letters, digits, - and _")
    kind = inputs.get("type") or "STANDARD"
    if kind not in TYPES:
        raise _invalid("ValidationException", f"type {kind!r} is not one of {', '.join(TYPES)}")
    check_definition(inputs["definition"])
    role = inputs["roleArn"]
    account.client("iam").get_role(RoleName=role.rsplit("/", 1)[-1])
    arn = account.client("stepfunctions").create_state_machine(**drop_none({
        "name": name, "definition": inputs["definition"], "roleArn": role, "type": kind,
        "loggingConfiguration": _logging(account, inputs.get("loggingConfiguration")),
        "tags": aws_tags(inputs.get("tags"), key="key", value="value") or None,
    }))["stateMachineArn"]
    return Created(id=arn, outputs={"arn": arn, "name": name, "status": "ACTIVE", "type": kind})
