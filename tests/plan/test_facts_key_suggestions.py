"""A facts file written by hand from the guide: an unknown key is named as one, with the section it
belongs to, instead of pydantic's "Extra inputs are not permitted"."""

from __future__ import annotations

import pytest
import yaml

from gpucloud.testing.facts import FactsError, load_facts

SCORES = [{"group": "trainers", "instanceTypes": ["p5.48xlarge"], "targetCapacity": 2,
           "takenAt": "2026-11-28T21:00:00Z", "zoneScores": {"us-east-1a": 5}}]


def message_for(tmp_path, document: dict) -> str:
    path = tmp_path / "facts.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(FactsError) as error:
        load_facts(path)
    return str(error.value)


def test_capacity_facts_at_the_top_name_their_section(tmp_path):
    message = message_for(tmp_path, {"spotScores": SCORES})
    assert message.endswith("facts.yaml: spotScores: is not a known key (did you mean 'capacity.spotScores'?)")


def test_a_misspelt_section_names_the_one_it_meant(tmp_path):
    message = message_for(tmp_path, {"bucket": [{"name": "data", "region": "us-east-1"}]})
    assert message.endswith("facts.yaml: bucket: is not a known key (did you mean 'buckets'?)")


def test_other_problems_keep_their_reason(tmp_path):
    message = message_for(tmp_path, {"capacity": {"spotScores": [{**SCORES[0], "targetCapacity": 0}]}})
    assert "capacity.spotScores.0.targetCapacity: Input should be greater than or equal to 1" in message
