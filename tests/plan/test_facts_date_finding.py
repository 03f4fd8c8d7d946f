"""Facts without their snapshot date say which key dates them, so a hand-written file can be dated."""

from __future__ import annotations

import datetime

from gpucloud.plan.preview import _facts_finding
from gpucloud.testing.facts import AccountFacts


def test_undated_facts_name_the_key_that_dates_them():
    finding = _facts_finding(AccountFacts())
    assert finding.severity == "info"
    assert finding.message == "planned against account facts without a snapshot date (snapshot.takenOn)"


def test_dated_facts_say_whose_and_when():
    today = datetime.date.today().isoformat()
    facts = AccountFacts.model_validate({"snapshot": {"takenOn": today, "accountId": "123456789012", "region": "us-east-1"}})
    assert _facts_finding(facts).message == f"planned against account facts of 123456789012 taken {today}"
