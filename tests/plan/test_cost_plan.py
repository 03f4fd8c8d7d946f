"""What a stack will cost: the three example stacks priced independently from the catalog's rows,
and budgets that warn or fail the plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucloud.cli import main
from gpucloud.config import load_stack_file
from gpucloud.plan import cost_findings
from gpucloud.plan.view import SUMMARIES
from support import ROOT, STACKS, plan_once

CATALOG = json.loads((ROOT / "infra/gpucloud/data/prices.json").read_text())
HOURS = 730
WORKDAY_FRACTION = (5 * 12) / (7 * 24)
"""08:00-20:00 Monday to Friday, the schedules of vision-train and notebooks."""


def hourly(instance_type: str) -> float:
    [row] = [r for r in CATALOG["instances"] if r["instanceType"] == instance_type and r["region"] == "us-east-1"]
    return row["usdPerHour"]


def spot_hourly(instance_type: str) -> float:
    family = instance_type.split(".")[0]
    discounts = [r["discount"] for r in CATALOG["spotDiscounts"] if r["family"] == family and r["region"] == "us-east-1"]
    return hourly(instance_type) * (1 - discounts[0]) if discounts else hourly(instance_type)


GP3 = next(r["usdPerGbMonth"] for r in CATALOG["storage"] if r["region"] == "us-east-1" and r["volumeType"] == "gp3")
KMS = next(r["usdPerKeyMonth"] for r in CATALOG["kms"] if r["region"] == "us-east-1")
NETWORK = next(HOURS * (r["natGatewayUsdPerHour"] + r["publicIpv4UsdPerHour"]) for r in CATALOG["network"]
               if r["region"] == "us-east-1")
"""The created network of each example stack: one NAT gateway and its public IPv4 address, all month."""

AMP = next(r for r in CATALOG["prometheus"] if r["region"] == "us-east-1")
GRAFANA = next(r for r in CATALOG["grafana"] if r["region"] == "us-east-1")
LLM_INFER_GPUS = {"g5.2xlarge": 1, "g6e.2xlarge": 1, "g5.4xlarge": 1}


def prometheus_month(nodes: int) -> float:
    """llm-infer's nodes each send 12 series for their one GPU, 5 of the node and 15 of the collector,
    every 30 s, all month; ingestion at the first tier, storage at 2 bytes a sample kept 150 days."""
    samples = nodes * (12 + 5 + 15) * 2 * 60 * HOURS
    ingestion = samples / 1e7 * AMP["ingestionTiers"][0]["usdPerTenMillionSamples"]
    storage = samples * 2 * (150 / (HOURS / 24)) / 2**30 * AMP["storageUsdPerGbMonth"]
    return ingestion + storage


LLM_INFER_GRAFANA = 2 * GRAFANA["editorUsdPerUserMonth"] + 5 * GRAFANA["viewerUsdPerUserMonth"]


VISION_LUSTRE = 2400 * next(
    r["usdPerGbMonth"] for r in CATALOG["fileSystems"]
    if (r["region"], r["deploymentType"], r["throughputPerTib"]) == ("us-east-1", "PERSISTENT_2", 125)
)
"""vision-train's 2400 GiB PERSISTENT_2 file system at 125 MB/s/TiB, billed all month in every scenario."""


def load_balancer_month(nodes: int, region: str = "us-east-1") -> float:
    """llm-infer's endpoint: the ALB all month and its LCUs at the estimate's stated assumption (1 + 0.5 a node)."""
    [row] = [r for r in CATALOG["loadBalancers"] if r["region"] == region]
    return HOURS * (row["albUsdPerHour"] + (1 + 0.5 * nodes) * row["lcuUsdPerHour"])


def workday(monthly: float) -> float:
    return monthly * WORKDAY_FRACTION


EXPECTED = {
    # minSize 0 in and out of the schedules: only the key. Working hours: 2 p4d nodes (the on-demand
    # base of 1, and 1 spot at the p4d discount) at desired; the workday schedule's maxSize 4 at the dearest type, p5.48xlarge
    # (1 on demand, 3 spot), at max. Each node carries a 200 GiB root and a 2000 GiB data volume.
    "vision-train": {
        "min": KMS + NETWORK + VISION_LUSTRE,
        "desired": workday(HOURS * (hourly("p4d.24xlarge") + spot_hourly("p4d.24xlarge")) + 2 * (200 + 2000) * GP3)
        + KMS + NETWORK + VISION_LUSTRE,
        "max": workday(HOURS * (hourly("p5.48xlarge") + 3 * spot_hourly("p5.48xlarge")) + 4 * (200 + 2000) * GP3)
        + KMS + NETWORK + VISION_LUSTRE,
    },
    # one on-demand server all month at min and desired; 8 at the dearest type, g6e.2xlarge, at max:
    # the base of 1 plus 4 of the 7 above it on demand (half rounded up), 3 spot
    # with Prometheus (30 s) and Grafana (2 editors, 5 viewers), and the endpoint's load balancer
    "llm-infer": {
        "min": HOURS * hourly("g5.2xlarge") + 150 * GP3 + KMS + NETWORK + prometheus_month(1) + LLM_INFER_GRAFANA
        + load_balancer_month(1),
        "desired": HOURS * hourly("g5.2xlarge") + 150 * GP3 + KMS + NETWORK + prometheus_month(1) + LLM_INFER_GRAFANA
        + load_balancer_month(1),
        "max": HOURS * (5 * hourly("g6e.2xlarge") + 3 * spot_hourly("g6e.2xlarge")) + 8 * 150 * GP3 + KMS + NETWORK
        + prometheus_month(8) + LLM_INFER_GRAFANA + load_balancer_month(8),
    },
    # the 200 GiB home volume and the key all month; one on-demand g5.xlarge notebook in working hours at
    # desired; at max the schedules keep maxSize 1 all week, so one notebook all month
    "notebooks": {
        "min": 200 * GP3 + KMS + NETWORK,
        "desired": workday(HOURS * hourly("g5.xlarge") + 100 * GP3) + 200 * GP3 + KMS + NETWORK,
        "max": HOURS * hourly("g5.xlarge") + 100 * GP3 + 200 * GP3 + KMS + NETWORK,
    },
}


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_example_stack_estimate_matches_the_catalog_to_the_cent(stack):
    settings = load_stack_file(STACKS / f"Pulumi.{stack}.yaml")
    estimate, findings = cost_findings(settings, gpus_per_instance=LLM_INFER_GPUS)
    assert estimate is not None and findings == []
    for scenario, expected in EXPECTED[stack].items():
        assert round(estimate.monthly.get(scenario), 2) == round(expected, 2), scenario
    document = estimate.to_dict()
    assert document["currency"] == "USD" and document["hoursPerMonth"] == 730
    assert set(document["monthly"]) == {"min", "desired", "max"}


def write_stack(tmp_path, budget: float, min_size: int, desired: int, types: str = "p5.48xlarge",
                region: str = "us-east-1") -> str:
    path = tmp_path / "Pulumi.pricey.yaml"
    path.write_text(
        f"config:\n  aws:region: {region}\n  gpu-cloud:project: pricey\n  gpu-cloud:owner: a@example.com\n"
        f"  gpu-cloud:costCenter: cc\n  gpu-cloud:budget: {{monthlyUsd: {budget}}}\n"
        "  gpu-cloud:account: {createServiceLinkedRole: true}\n"
        "  gpu-cloud:groups:\n"
        f"    - {{name: big, instanceTypes: [{types}], minSize: {min_size}, desiredCapacity: {desired}, maxSize: 4,"
        " onDemandBaseCapacity: 4, spotPercent: 0}\n"
    )
    return str(path)


def test_minimum_capacity_over_budget_fails_the_plan_naming_group_and_figures(tmp_path, capsys):
    assert main(["plan", "--config", write_stack(tmp_path, budget=1000, min_size=1, desired=1), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    [finding] = [f for f in document["findings"] if f["source"] == "budget"]
    group = HOURS * hourly("p5.48xlarge") + 100 * GP3
    minimum = group + KMS + NETWORK
    assert finding["severity"] == "failure" and finding["rule"] == "budget-exceeded-at-minimum"
    assert finding["message"].startswith(
        f"the stack costs ${minimum:,.2f} per month at minimum capacity, above the monthly budget of $1,000.00 "
        f"(groups: big ${group:,.2f}; largest lines: big/instances (on-demand) ${HOURS * hourly('p5.48xlarge'):,.2f}, "
    )
    assert finding["message"].endswith("); lower minSize, schedule the groups down, or raise the budget")
    assert round(document["costEstimate"]["monthly"]["min"], 2) == round(minimum, 2)


def test_scheduled_group_with_min_size_zero_does_not_fail_a_budget_below_its_desired_cost(tmp_path):
    """notebooks: minSize 0 everywhere, so at minimum only the home volume and the key count."""
    stack = (STACKS / "Pulumi.notebooks.yaml").read_text()
    assert "monthlyUsd: 1500" in stack
    (tmp_path / "Pulumi.notebooks.yaml").write_text(stack.replace("monthlyUsd: 1500", "monthlyUsd: 200"))

    _estimate, findings = cost_findings(load_stack_file(tmp_path / "Pulumi.notebooks.yaml"))

    assert [(finding.severity, finding.rule) for finding in findings] == [("warning", "budget-exceeded-at-desired")]


def test_desired_capacity_over_budget_only_warns(tmp_path, capsys):
    assert main(["plan", "--config", write_stack(tmp_path, budget=1000, min_size=0, desired=1)]) == 0
    out = capsys.readouterr().out
    assert "warning [budget: budget-exceeded-at-desired]" in out
    assert "All amounts are in USD" in out


def test_unpriced_type_gives_a_partial_estimate_that_still_fails_the_budget(tmp_path, capsys):
    # p5e has no published price in us-west-2, where moto offers it (the catalog says why).
    config = write_stack(tmp_path, budget=5, min_size=1, desired=1, types="p5e.48xlarge, p5.48xlarge", region="us-west-2")

    assert main(["plan", "--config", config, "--json"]) == 1

    document = json.loads(capsys.readouterr().out)
    estimate = document["costEstimate"]
    [unpriced] = estimate["unpriced"]
    assert unpriced["resource"] == "big/instances (p5e.48xlarge)" and unpriced["unit"] == "instance-hours"
    assert unpriced["quantity"] == {"min": HOURS, "desired": HOURS, "max": 4 * HOURS}
    # Priced: the root volume of the one running node, the key and the network; the instance hours are not.
    assert round(estimate["monthly"]["min"], 2) == round(100 * GP3 + KMS + NETWORK, 2)
    rules = {finding["rule"]: finding for finding in document["findings"] if finding["source"] in ("cost", "budget")}
    assert rules["partial-cost-estimate"]["severity"] == "warning"
    assert "big/instances (p5e.48xlarge)" in rules["partial-cost-estimate"]["message"]
    assert rules["budget-exceeded-at-minimum"]["severity"] == "failure"
    assert f"costs at least ${100 * GP3 + KMS + NETWORK:,.2f}" in rules["budget-exceeded-at-minimum"]["message"]


def test_partial_estimate_in_the_table_says_so_and_gives_the_refresh_hint_once(tmp_path, capsys):
    config = write_stack(tmp_path, budget=100000, min_size=1, desired=1, types="p5e.48xlarge", region="us-west-2")
    # Unpriced GPU compute fails the budget check unless the stack accepts it (test_unpriced_compute.py).
    path = Path(config)
    path.write_text(path.read_text().replace("{monthlyUsd: 100000}", "{monthlyUsd: 100000, acceptUnpricedCompute: true}"))

    assert main(["plan", "--config", config, "--width", "250"]) == 0

    out = capsys.readouterr().out
    assert "not priced" in out and "PARTIAL ESTIMATE" in out and "at least $" in out
    assert out.count("gpucloud prices refresh") == 1
    assert "Not included: CloudWatch" in out


@pytest.mark.parametrize(("state", "shown"), [
    ({"policyType": "StepScaling", "adjustmentType": "ExactCapacity",
      "stepAdjustments": [{"metricIntervalUpperBound": "0", "scalingAdjustment": 0}]}, "step: set capacity to 0"),
    ({"policyType": "StepScaling", "adjustmentType": "ChangeInCapacity",
      "stepAdjustments": [{"metricIntervalUpperBound": "0", "scalingAdjustment": -1}]}, "step: -1 instance"),
    ({"policyType": "StepScaling", "adjustmentType": "ChangeInCapacity",
      "stepAdjustments": [{"metricIntervalLowerBound": "0", "scalingAdjustment": 2}]}, "step: +2 instances"),
    ({"policyType": "SimpleScaling", "adjustmentType": "PercentChangeInCapacity", "scalingAdjustment": 50},
     "simple: +50% capacity"),
])
def test_plan_shows_what_a_scaling_policy_does_so_idle_shutdown_reads_as_scale_to_zero(state, shown):
    assert SUMMARIES["aws:autoscaling/policy:Policy"](state) == shown


def test_notebooks_plan_shows_its_idle_shutdown_as_a_scale_to_zero(capsys):
    main(["plan", "--config", str(STACKS / "Pulumi.notebooks.yaml"), "--width", "250"])

    out = capsys.readouterr().out
    assert "step: set capacity to 0" in out and "step +0" not in out


def without_managed_monitoring(settings):
    config = settings.config
    monitoring = config.monitoring.model_copy(update={
        "prometheus": config.monitoring.prometheus.model_copy(update={"enabled": False}),
        "grafana": config.monitoring.grafana.model_copy(update={"enabled": False}),
    })
    return settings.model_copy(update={"config": config.model_copy(update={"monitoring": monitoring})})


def test_llm_infer_in_us_west_2_is_priced_in_full_from_that_regions_rows():
    settings = without_managed_monitoring(load_stack_file(STACKS / "Pulumi.llm-infer.yaml", region="us-west-2"))

    estimate, findings = cost_findings(settings)

    [hourly_west] = [r["usdPerHour"] for r in CATALOG["instances"]
                     if r["instanceType"] == "g5.2xlarge" and r["region"] == "us-west-2"]
    [gp3_west] = [r["usdPerGbMonth"] for r in CATALOG["storage"] if r["region"] == "us-west-2"]
    [kms_west] = [r["usdPerKeyMonth"] for r in CATALOG["kms"] if r["region"] == "us-west-2"]
    [network_west] = [HOURS * (r["natGatewayUsdPerHour"] + r["publicIpv4UsdPerHour"]) for r in CATALOG["network"]
                      if r["region"] == "us-west-2"]
    assert estimate.complete and findings == []
    assert round(estimate.monthly.desired, 2) == round(
        HOURS * hourly_west + 150 * gp3_west + kms_west + network_west + load_balancer_month(1, "us-west-2"), 2)


def test_llm_infer_in_us_west_2_names_the_prometheus_lines_the_catalog_cannot_price():
    settings = load_stack_file(STACKS / "Pulumi.llm-infer.yaml", region="us-west-2")

    estimate, findings = cost_findings(settings)

    assert [line.resource for line in estimate.unpriced] == [
        "llm-infer/Prometheus samples ingested", "llm-infer/Prometheus storage (150-day retention)",
    ]
    assert all("us-west-2" in line.reason for line in estimate.unpriced)
    assert [finding.rule for finding in findings] == ["partial-cost-estimate"]


def test_the_plan_counts_each_types_gpus_for_the_prometheus_series():
    """llm-infer's types have one GPU each (moto's DescribeInstanceTypes, as the program resolved
    them): 32 series a node, not the 8-GPU count the estimate falls back on."""
    plan = plan_once(STACKS / "Pulumi.llm-infer.yaml")

    [line] = [line for line in plan.cost_estimate.lines if line.resource == "llm-infer/Prometheus samples ingested"]
    assert line.quantity.desired == pytest.approx((12 + 5 + 15) * 2 * 60 * HOURS / 1e7)
    assert "not given to the estimate" not in line.note
