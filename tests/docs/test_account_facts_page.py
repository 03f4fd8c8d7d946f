"""The account facts guide shows the whole file: its example is a facts file the plan takes, and it
names every top-level section the plan reads (a newcomer writes facts from that page alone)."""

from __future__ import annotations

import re

import yaml

from gpucloud.testing.facts import AccountFacts
from support import ROOT

PAGE = ROOT / "docs" / "guides" / "account-facts.md"


def example() -> dict:
    match = re.search(r"```yaml\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert match, f"no yaml block in {PAGE}"
    return yaml.safe_load(match.group(1))


def test_the_example_is_a_facts_file_the_plan_takes():
    facts = AccountFacts.model_validate(example())
    assert facts.capacity is not None and facts.capacity.spot_scores[0].zone_scores


def test_every_section_of_the_facts_file_is_shown_and_explained():
    sections = {field.alias or name for name, field in AccountFacts.model_fields.items()}
    text = PAGE.read_text()
    assert sections - set(example()) == set(), "sections the example leaves out"
    assert [name for name in sorted(sections) if f"**`{name}`**" not in text] == [], "sections the list does not explain"
