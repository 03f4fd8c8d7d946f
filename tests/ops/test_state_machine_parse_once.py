"""gpucloud.testing.run_command's speed-up: inside `executing_state_machines` moto's Step Functions
parses a definition's syntax tree once, and still builds each execution its own program;
CreateStateMachine checks a definition the first time only, and still refuses an invalid one; and a
JSONPath is parsed once."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from botocore.exceptions import ClientError
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser, ASLParserException

from gpucloud.testing.run_command import Agents, executing_state_machines

DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})


def test_a_definition_s_tree_is_parsed_once_and_each_parse_builds_its_own_program():
    with executing_state_machines(Agents()):
        first, tree = AmazonStateLanguageParser.parse(DEFINITION)
        second, again = AmazonStateLanguageParser.parse(DEFINITION)

    assert again is tree
    assert second is not first and second.start_at.start_at_name == first.start_at.start_at_name == "Done"
    assert AmazonStateLanguageParser.parse(DEFINITION)[1] is not tree, "outside the block moto parses as before"


def test_an_invalid_definition_is_refused_on_every_parse():
    invalid = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Nonsense"}}})
    with executing_state_machines(Agents()):
        for _ in range(2):
            with pytest.raises(ASLParserException):
                AmazonStateLanguageParser.parse(invalid)


def test_create_state_machine_checks_a_definition_the_first_time_only_and_refuses_an_invalid_one():
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    from gpucloud.testing import moto_account

    definition = json.dumps({"StartAt": "Once", "States": {"Once": {"Type": "Succeed"}}})
    role = "arn:aws:iam::123456789012:role/machine"
    built = []
    program = Preprocessor.visitState_machine

    def counted(self, tree):
        built.append(tree)
        return program(self, tree)

    with moto_account("us-east-1") as account, executing_state_machines(Agents()), \
            mock.patch.object(Preprocessor, "visitState_machine", counted):
        states = account.session.client("stepfunctions")
        for name in ("first", "second"):
            states.create_state_machine(name=name, definition=definition, roleArn=role)
        with pytest.raises(ClientError, match="ASLParserException"):
            states.create_state_machine(name="invalid", roleArn=role, definition=json.dumps(
                {"StartAt": "Once", "States": {"Once": {"Type": "Nonsense"}}}))

    assert len(built) == 1, "the second machine's definition is the first's"


def test_a_json_path_is_parsed_once_and_reads_and_writes_as_before():
    from jsonpath_ng.exceptions import JsonPathParserError
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    data = {"job": {"nodes": [{"id": "i-1"}, {"id": "i-2"}]}}
    with executing_state_machines(Agents()):
        assert json_path.parse("$.job.nodes[*].id") is json_path.parse("$.job.nodes[*].id")
        assert result_path.parse("$.job.waited") is result_path.parse("$.job.waited")
        assert json_path.extract_json("$.job.nodes[*].id", data) == ["i-1", "i-2"]
        assert result_path.parse("$.job.waited").update_or_create(data, 5)["job"]["waited"] == 5
        for _ in range(2):
            with pytest.raises(JsonPathParserError):
                json_path.parse("$.job[")
    assert json_path.parse("$.job.nodes[*].id") is not json_path.parse("$.job.nodes[*].id"), "moto's own outside"
