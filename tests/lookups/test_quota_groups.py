"""A quota's message names the groups that draw on it: an on-demand-only group is not among those
that need the spot quota (a team would look for spot settings it does not have)."""

from __future__ import annotations

from gpucloud.lookups.facts import InstanceTypeFacts
from gpucloud.lookups.quotas import ON_DEMAND_QUOTAS, SPOT_QUOTAS, quota_needs
from support import minimal_config, settings_for

P5 = InstanceTypeFacts("p5.48xlarge", 8, "H100", 655360, True, 32, 32, 8, ("x86_64",), vcpus=192)
P4D = InstanceTypeFacts("p4d.24xlarge", 8, "A100", 327680, True, 4, 4, 8, ("x86_64",), vcpus=96)


def test_each_quota_names_only_the_groups_that_draw_on_it():
    settings = settings_for(minimal_config(groups=[
        {"name": "trainers", "instanceTypes": ["p5.48xlarge"], "maxSize": 4, "spotPercent": 100},
        {"name": "evals", "instanceTypes": ["p4d.24xlarge"], "maxSize": 2, "spotPercent": 0},
    ]))
    trainers, evals = settings.config.groups

    needs = {(need.code, need.name): need for need in quota_needs([(trainers, (P5,)), (evals, (P4D,))])}

    assert needs[SPOT_QUOTAS["P"]].groups == ("trainers",) and needs[SPOT_QUOTAS["P"]].vcpus_at_max == 4 * 192
    assert needs[ON_DEMAND_QUOTAS["P"]].groups == ("evals",) and needs[ON_DEMAND_QUOTAS["P"]].vcpus_at_max == 2 * 96
