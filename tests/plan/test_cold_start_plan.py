"""The cold-start budget in the plan: a model server with a 20 GiB image and 15 GiB of weights and a
300 s grace period fails naming the keys; pulled in the warm pool, or with the grace period left to
follow the estimate, it passes, and the group's timers carry what the plan said."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpucloud.config.cold_start_estimate import grace_period_seconds
from gpucloud.config.stack_file import load_stack_file
from gpucloud.plan.cold_start import cold_start, cold_start_line
from gpucloud.plan.preview import plan_stack
from support import ROOT, settings_for

STACK_FILE = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.cold-serving.yaml"


def _values() -> dict:
    document = yaml.safe_load(STACK_FILE.read_text(encoding="utf-8"))["config"]
    return {key.removeprefix("gpu-cloud:"): value for key, value in document.items() if key.startswith("gpu-cloud:")}


def _with_group(**changes) -> dict:
    values = copy.deepcopy(_values())
    group = values["groups"][0]
    for key, value in changes.items():
        if value is None:
            group.pop(key, None)
        else:
            group[key] = value
    return values


@pytest.fixture(scope="module")
def slow_plan():
    return plan_stack(load_stack_file(STACK_FILE))


def test_a_server_not_ready_within_its_grace_period_fails_the_plan_naming_the_keys(slow_plan):
    [finding] = [finding for finding in slow_plan.findings if finding.rule == "cold-start-budget"]
    assert slow_plan.failed and finding.severity == "failure"
    assert "gpu-cloud:groups[0].healthCheckGracePeriodSeconds to at least 660" in finding.message
    assert "gpu-cloud:groups[0].warmPool with prepullImages: true" in finding.message
    [entry] = slow_plan.to_preview_json()["coldStart"]
    phases = {phase["phase"]: phase["seconds"] for phase in entry["phases"]}
    assert list(phases) == ["boot", "agent", "gate", "pull", "weights", "load", "healthy", "slowStart"]
    assert phases["pull"] == pytest.approx(20 * 1073.741824 / 77.5, abs=0.1)
    assert entry["verdict"] == "replaced before ready"
    grace = next(timer for timer in entry["timers"] if timer["name"] == "health check grace period")
    assert (grace["limitSeconds"], grace["source"], grace["fits"]) == (300, "stack file", False)


def test_the_plan_line_says_when_it_serves_and_which_timer_is_too_short(slow_plan):
    line = cold_start_line(slow_plan.cold_start[0])
    assert line.startswith("servers: ready ~13m17s after launch (boot 3m, agent 1m, gate 1m, pull 4m37s")
    assert "grace period 5m (stack file) TOO SHORT for 8m17s from InService to serving" in line


def test_images_pulled_in_the_warm_pool_fit_the_same_grace_period():
    values = _with_group(warmPool={"minSize": 1, "prepullImages": True})
    plan = plan_stack(settings_for(values, stack="cold-serving"))
    assert not [finding for finding in plan.findings if finding.rule == "cold-start-budget"]
    [entry] = plan.cold_start
    assert entry["path"] == "warm pool" and entry["verdict"] == "fits"
    assert {phase["phase"]: phase["seconds"] for phase in entry["phases"]}["pull"] == 0
    assert any("pool empty" in note for note in entry["notes"])


def test_a_grace_period_left_unset_follows_the_estimate_into_the_group_and_the_endpoint():
    values = _with_group(healthCheckGracePeriodSeconds=None)
    values["groups"][0]["services"]["containers"][0]["imageSizeGiB"] = 60
    settings = settings_for(values, stack="cold-serving")
    expected = grace_period_seconds(settings.config, settings.config.groups[0], instance_store=True)
    assert expected == 1320  # (60 GiB at 77.5 MB/s + weights, load, checks, slow start) x 1.25, to the minute
    plan = plan_stack(settings)
    assert not [finding for finding in plan.findings if finding.rule == "cold-start-budget"]
    [group] = [r for r in plan.resources if r.type == "aws:autoscaling/group:Group"]
    assert group.state["healthCheckGracePeriod"] == expected
    assert group.state["instanceRefresh"]["preferences"]["instanceWarmup"] == str(expected)


def test_a_longer_grace_period_passes():
    settings = settings_for(_with_group(healthCheckGracePeriodSeconds=600), stack="cold-serving")
    [entry] = cold_start(settings.config, {"servers": True})
    assert entry["verdict"] == "fits"


def test_weights_read_in_place_must_fit_the_start_period():
    values = _with_group(healthCheckGracePeriodSeconds=None)
    values["storage"] = {"s3Mount": {"install": "download"}}
    container = values["groups"][0]["services"]["containers"][0]
    container["weights"] = {"source": "s3://example-model-artifacts/models/llm/llama-70b/", "sizeGiB": 700,
                            "to": "mountpoint"}
    settings = settings_for(values, stack="cold-serving")
    [entry] = cold_start(settings.config, {"servers": True})
    timer = next(timer for timer in entry["timers"] if timer["name"] == "server start period")
    assert timer["key"] == "gpu-cloud:groups[0].services.containers[0].healthCheck.startPeriodSeconds"
    assert not timer["fits"] and timer["neededSeconds"] == pytest.approx(700 * 1073.741824 / 298, abs=0.1)


def test_a_pool_without_a_minimum_still_holds_what_max_leaves_beside_desired():
    settings = settings_for(_with_group(warmPool={"prepullImages": True}), stack="cold-serving")
    [entry] = cold_start(settings.config, {"servers": True})
    assert entry["path"] == "warm pool" and entry["verdict"] == "fits"
    full = settings_for(_with_group(warmPool={"prepullImages": True}, minSize=4, maxSize=4), stack="cold-serving")
    [entry] = cold_start(full.config, {"servers": True})
    assert entry["path"] == "launch" and entry["verdict"] == "replaced before ready", "a pool of 4 - 4 holds none"
