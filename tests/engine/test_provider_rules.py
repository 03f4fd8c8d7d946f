"""The bridged provider's own input rules, checked before each handler: a resource the
terraform-provider-aws schema refuses (ConflictsWith, ExactlyOneOf, RequiredWith, an enum, a range,
MinItems) fails the offline plan naming the resource, the property, the rule and the provider source
it was read from, although moto alone would take it."""

from __future__ import annotations

import pulumi_aws as aws
import pytest

from gpucloud.plan import plan_program
from gpucloud.testing import provider_rules


def conflicting_template():
    aws.ec2.LaunchTemplate(
        "both-ways", instance_type="g5.xlarge",
        instance_requirements={"vcpu_count": {"min": 4}, "memory_mib": {"min": 16384}},
    )


def alarm_without_statistic():
    aws.cloudwatch.MetricAlarm(
        "no-statistic", comparison_operator="GreaterThanThreshold", evaluation_periods=1,
        metric_name="CPUUtilization", namespace="AWS/EC2", period=60, threshold=90,
    )


def rotation_period_without_rotation():
    aws.kms.Key("half-rotation", rotation_period_in_days=180)


def alarm_with_unknown_missing_data():
    aws.cloudwatch.MetricAlarm(
        "sometimes", comparison_operator="GreaterThanThreshold", evaluation_periods=1, metric_name="CPUUtilization",
        namespace="AWS/EC2", period=60, statistic="Average", threshold=90, treat_missing_data="sometimes",
    )


def template_with_hop_limit_65():
    aws.ec2.LaunchTemplate("far-hops", metadata_options={"http_tokens": "required", "http_put_response_hop_limit": 65})


def grafana_in_one_subnet():
    aws.grafana.Workspace(
        "one-subnet", account_access_type="CURRENT_ACCOUNT", authentication_providers=["AWS_SSO"],
        permission_type="SERVICE_MANAGED", grafana_version="10.4",
        vpc_configuration={"security_group_ids": ["sg-0123456789abcdef0"], "subnet_ids": ["subnet-0123456789abcdef0"]},
    )


CASES = {
    "conflicts-with": (
        conflicting_template,
        "aws:ec2/launchTemplate:LaunchTemplate 'both-ways': instanceRequirements breaks the provider rule "
        "ConflictsWith instanceType (instanceRequirements and instanceType are both set)",
        "internal/service/ec2/ec2_launch_template.go",
    ),
    "exactly-one-of": (
        alarm_without_statistic,
        "aws:cloudwatch/metricAlarm:MetricAlarm 'no-statistic': metricName breaks the provider rule "
        "ExactlyOneOf statistic, extendedStatistic (none is set)",
        "internal/service/cloudwatch/metric_alarm.go",
    ),
    "required-with": (
        rotation_period_without_rotation,
        "aws:kms/key:Key 'half-rotation': rotationPeriodInDays breaks the provider rule "
        "RequiredWith enableKeyRotation (enableKeyRotation not set)",
        "internal/service/kms/key.go",
    ),
    "enum": (
        alarm_with_unknown_missing_data,
        "aws:cloudwatch/metricAlarm:MetricAlarm 'sometimes': treatMissingData = \"sometimes\" breaks the provider rule "
        "enum: one of missing, ignore, breaching, notBreaching",
        "internal/service/cloudwatch/metric_alarm.go",
    ),
    "range": (
        template_with_hop_limit_65,
        "aws:ec2/launchTemplate:LaunchTemplate 'far-hops': metadataOptions.httpPutResponseHopLimit = 65 breaks the "
        "provider rule range: between 1 and 64",
        "internal/service/ec2/ec2_launch_template.go",
    ),
    "min-items": (
        grafana_in_one_subnet,
        "aws:grafana/workspace:Workspace 'one-subnet': vpcConfiguration.subnetIds = [\"subnet-0123456789abcdef0\"] "
        "breaks the provider rule items: 2 to 100 (got 1)",
        "internal/service/grafana/workspace.go",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_each_kind_of_provider_rule_fails_the_plan_with_its_source(case):
    program, message, source = CASES[case]

    plan = plan_program(program)

    [finding] = [finding for finding in plan.findings if finding.source == "provider" and finding.message.startswith(message)]
    assert plan.failed and finding.severity == "failure" and finding.rule == "provider-rule"
    assert f"hashicorp/terraform-provider-aws {source}" in finding.message and "read 2026-11-25" in finding.message
    assert finding.urn.endswith(f"::{message.split(chr(39))[1]}")


@pytest.mark.parametrize("case", CASES)
def test_without_the_provider_rules_moto_takes_each_of_them(case, monkeypatch):
    monkeypatch.setattr(provider_rules, "check", lambda *arguments: [])

    plan = plan_program(CASES[case][0])

    assert [finding for finding in plan.findings if finding.source in ("provider", "program")] == []


def test_a_handler_failing_on_an_input_the_provider_refuses_fails_with_the_providers_reason():
    from gpucloud.plan.program_source import ProgramFailed

    with pytest.raises(ProgramFailed, match=r"ProviderRulesBroken: aws:ec2/route:Route 'nowhere': destinationCidrBlock / "
                                            r".* breaks the provider rule ExactlyOneOf .*internal/service/ec2/vpc_route\.go@"):
        plan_program(lambda: aws.ec2.Route("nowhere", route_table_id="rtb-0123456789abcdef0", gateway_id="igw-0123456789abcdef0"))


def test_where_aws_refuses_the_input_too_its_answer_stays_noting_the_providers():
    from gpucloud.plan.program_source import ProgramFailed

    with pytest.raises(ProgramFailed, match="InvalidVpc.Range") as failed:
        plan_program(lambda: aws.ec2.Vpc("wide", cidr_block="10.0.0.0/8"))

    [note] = failed.value.error.__notes__
    assert note.startswith("the provider refuses it first: aws:ec2/vpc:Vpc 'wide': cidrBlock = \"10.0.0.0/8\"")


def test_an_enum_the_provider_takes_from_the_aws_sdk_is_botocores_list():
    inputs = {"mixedInstancesPolicy": {"launchTemplate": {"overrides": [
        {"instanceRequirements": {"acceleratorNames": ["a100", "h100"], "vcpuCount": {"min": 1}, "memoryMib": {"min": 1}}},
    ]}}}

    [violation] = provider_rules.check("aws:autoscaling/group:Group", "g", inputs)

    assert violation.property == "mixedInstancesPolicy.launchTemplate.overrides[0].instanceRequirements.acceleratorNames[1]"
    assert violation.value == "h100" and "a100, v100, k80, t4, m60, radeon-pro-v520, vu9p" in violation.rule


def test_every_type_the_engine_handles_has_rules_and_every_rule_names_its_source():
    from gpucloud.testing.registry import RESOURCES

    document = provider_rules.rules()
    assert document["provider"] == "hashicorp/terraform-provider-aws" and document["read"] == "2026-11-25"
    handled = {resource_type for resource_type, handler in RESOURCES.items()
               if handler.__module__.startswith("gpucloud.testing.handlers")}
    assert sorted(handled - set(document["resources"])) == []
    for resource_type, entry in document["resources"].items():
        assert resource_type in RESOURCES, resource_type
        assert entry["source"].endswith(".go") and entry["commit"], resource_type
        for rule in entry["rules"]:
            assert "path" in rule or "exactlyOneOf" in rule or "atLeastOneOf" in rule, (resource_type, rule)
            if isinstance(rule.get("enum"), str):
                assert provider_rules.enum_values(rule), (resource_type, rule)


def test_gpucloud_plan_says_what_the_provider_refuses_in_one_line_and_exits_as_a_violation(tmp_path, capsys):
    from gpucloud.cli import PLAN_VIOLATIONS, main

    program = tmp_path / "__main__.py"
    program.write_text('import pulumi_aws as aws\n'
                       'aws.ec2.Route("nowhere", route_table_id="rtb-0123456789abcdef0", gateway_id="igw-0123456789abcdef0")\n')

    assert main(["plan", "--program", str(program)]) == PLAN_VIOLATIONS
    error = capsys.readouterr().err
    assert error.startswith(f"error: program {program}: aws:ec2/route:Route 'nowhere': destinationCidrBlock / ")
    assert error.count("\n") == 1
