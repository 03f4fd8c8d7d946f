"""gpucloud.testing.run_command's speed-up: inside `executing_state_machines` moto's Step Functions
parses a definition's syntax tree once, and still builds each execution its own program."""

from __future__ import annotations

import json

import pytest
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
