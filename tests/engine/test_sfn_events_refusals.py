"""What Step Functions, the provider and EventBridge refuse but moto accepts, refused by the engine
first (testing/handlers/sfn.py, events.py): a definition that is not the Amazon States Language,
a state machine name outside the provider's pattern, logging without a log group's `:*` ARN, a
Step Functions target without a role, an event pattern that is not a JSON object. And what they
take: the job supervisor of every example stack's values (tests/components covers the stacks)."""

from __future__ import annotations

import json

import pulumi_aws as aws
import pytest
from botocore.exceptions import ClientError

from gpucloud.documents.job_supervisor import supervisor_definition_content
from gpucloud.testing import run_program

TRUST = json.dumps({"Version": "2012-10-17", "Statement": []})


def machine(name: str, definition: str, **options) -> None:
    role = aws.iam.Role(f"{name}-role", name=f"{name}-role", assume_role_policy=TRUST)
    aws.sfn.StateMachine(name, name=name, role_arn=role.arn, definition=definition, **options)


PASS = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})


def test_a_definition_that_is_not_states_language_is_refused(account):
    broken = json.dumps({"StartAt": "Missing", "States": {"P": {"Type": "Wait", "End": True}}})
    with pytest.raises(ClientError, match="InvalidDefinition"):
        run_program(lambda: machine("broken", broken), account)


def test_a_state_that_neither_goes_on_nor_ends_is_refused(account):
    stuck = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": False}}})
    with pytest.raises(ClientError, match="state P must have exactly one of Next and End: true"):
        run_program(lambda: machine("stuck", stuck), account)


def test_a_state_machine_name_outside_the_provider_pattern_is_refused(account):
    with pytest.raises(Exception, match=r"(1-80 letters|the name should only contain)"):
        run_program(lambda: machine("jobs.v2", PASS), account)


def test_logging_needs_a_log_group_arn_ending_in_colon_star(account):
    def program():
        group = aws.cloudwatch.LogGroup("logs", name="/sfn/jobs")
        machine("jobs", PASS, logging_configuration={"level": "ERROR", "log_destination": group.arn})

    with pytest.raises(ClientError, match="needs a log group ARN ending in ':\\*'"):
        run_program(program, account)


def test_the_job_supervisor_definition_is_taken(account):
    definition = supervisor_definition_content(
        document_name="gpu-cloud-demo-run", log_group_name="/gpu-cloud/demo/jobs",
        topic_arn=f"arn:aws:sns:us-east-1:{account.account_id}:gpu-cloud-demo-alerts", bucket="demo-data",
        jobs_prefix="runs/jobs/")

    def program():
        group = aws.cloudwatch.LogGroup("logs", name="/gpu-cloud/demo/jobs-supervisor")
        machine("gpu-cloud-demo-jobs", definition,
                logging_configuration={"level": "ERROR", "log_destination": group.arn.apply(lambda arn: f"{arn}:*")})

    run_program(program, account)
    [found] = account.client("stepfunctions").list_state_machines()["stateMachines"]
    assert found["name"] == "gpu-cloud-demo-jobs"


def moto_verdict(definition: str) -> str | None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser, ASLParserException

    try:
        AmazonStateLanguageParser.parse(definition)
    except (ValueError, ASLParserException) as error:
        return repr(error)
    return None


@pytest.mark.parametrize("definition", [
    supervisor_definition_content(document_name="gpu-cloud-demo-run", log_group_name="/gpu-cloud/demo/jobs",
                                  topic_arn="arn:aws:sns:us-east-1:123456789012:gpu-cloud-demo-alerts", bucket="demo-data",
                                  jobs_prefix="runs/jobs/"),
    PASS,
    json.dumps({"StartAt": "P", "States": {"P": {"Type": "Nonsense", "End": True}}}),
    json.dumps({"StartAt": "Missing", "States": {"P": {"Type": "Wait", "End": True}}}),
    json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "ResultPath": "not a path", "End": True}}}),
    '{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}',
], ids=["supervisor", "pass", "unknown type", "wait without seconds", "bad result path", "unclosed"])
def test_the_engine_s_verdict_on_a_definition_is_moto_s(definition):
    """Valid or not, and the error's type and place. Not the wording: ANTLR words one error as what
    its cache of earlier parses leads it to (moto's own parser says "extraneous input" of the unclosed
    definition the first time, "missing '}'" the next), and a ValueError's repr holds addresses."""
    from gpucloud.testing.handlers.sfn import asl_parse_error

    def gist(verdict: str | None) -> str | None:
        return verdict and verdict.split(",")[0].split("(")[0]

    assert gist(asl_parse_error.__wrapped__(definition)) == gist(moto_verdict(definition))


def test_a_state_machine_target_without_a_role_is_refused(account):
    def program():
        rule = aws.cloudwatch.EventRule("rule", name="node-left", event_pattern=json.dumps({"source": ["aws.autoscaling"]}))
        aws.cloudwatch.EventTarget("target", rule=rule.name, target_id="jobs",
                                   arn=f"arn:aws:states:us-east-1:{account.account_id}:stateMachine:jobs")

    with pytest.raises(ClientError, match="RoleArn is required"):
        run_program(program, account)


def test_an_event_pattern_that_is_not_a_json_object_is_refused(account):
    with pytest.raises(ClientError, match="InvalidEventPatternException"):
        run_program(lambda: aws.cloudwatch.EventRule("rule", name="node-left", event_pattern="[]"), account)


def test_a_definition_is_parsed_once_per_process_and_its_refusal_kept_too(monkeypatch):
    """Every plan of a stack creates the job supervisor's state machine, whose definition takes moto's
    ASL parser about 3 s: the engine keeps the parser's verdict per definition text."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    from gpucloud.testing.handlers import sfn

    parsed: list[str] = []
    original = AmazonStateLanguageParser.parse

    def counting(definition, *args, **kwargs):
        parsed.append(definition)
        return original(definition, *args, **kwargs)

    monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(counting))
    quick = sfn._parsed_in_sll_mode
    monkeypatch.setattr(sfn, "_parsed_in_sll_mode", lambda definition: parsed.append(definition) or quick(definition))
    good = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}, "Comment": "parsed once"})
    bad = json.dumps({"StartAt": "Nowhere", "States": {"Done": {"Type": "Nope"}}, "Comment": "refused once"})

    sfn.check_definition(good)
    sfn.check_definition(good)
    for _ in range(2):
        with pytest.raises(Exception, match="Invalid State Machine Definition"):
            sfn.check_definition(bad)

    assert parsed == [good, bad, bad], "each once in SLL mode, the refused one again in LL mode for moto's message"
