"""Two stacks of one project in one account: every account-unique name comes from the stack, so
both apply completely and neither touches the other's resources; the Project tag stays shared."""

from __future__ import annotations

import pytest
import yaml

from support import STACKS, deploy, settings_for
from gpucloud.config import ConfigError, split_namespace


def vision_train(stack: str):
    raw = yaml.safe_load((STACKS / "Pulumi.vision-train.yaml").read_text())["config"]
    values, region = split_namespace(raw, stack=stack, source=f"stacks/Pulumi.{stack}.yaml")
    return settings_for(values, stack=stack, region=region)


def names(account) -> dict[str, set[str]]:
    iam, cloudwatch = account.client("iam"), account.client("cloudwatch")
    return {
        "roles": {role["RoleName"] for role in iam.list_roles()["Roles"]},
        "profiles": {profile["InstanceProfileName"] for profile in iam.list_instance_profiles()["InstanceProfiles"]},
        "aliases": {alias["AliasName"] for alias in account.client("kms").list_aliases()["Aliases"]
                    if alias["AliasName"].startswith("alias/gpu-cloud/")},
        "topics": {topic["TopicArn"].rsplit(":", 1)[1] for topic in account.client("sns").list_topics()["Topics"]},
        "dashboards": {entry["DashboardName"] for entry in cloudwatch.list_dashboards()["DashboardEntries"]},
        "budgets": {budget["BudgetName"] for budget in account.client("budgets").describe_budgets(
            AccountId=account.account_id).get("Budgets", [])},
        "vaults": {vault["BackupVaultName"] for vault in account.client("backup").list_backup_vaults()["BackupVaultList"]},
        "groups": {group["AutoScalingGroupName"] for group in
                   account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]},
    }


def test_two_stacks_of_one_project_apply_side_by_side_without_touching_each_other(account):
    dev, prod = vision_train("vision-train-dev"), vision_train("vision-train-prod")
    deploy(dev, account)
    after_dev = names(account)
    dashboard_of_dev = account.client("cloudwatch").get_dashboard(DashboardName="gpu-cloud-vision-train_vision-train-dev")
    deploy(prod, account)
    after_both = names(account)

    for kind, before in after_dev.items():
        if not before:
            continue
        assert before <= after_both[kind], f"prod removed or renamed dev's {kind}"
        added = after_both[kind] - before
        assert added and all("vision-train-prod" in name for name in added), (kind, added)
    assert "gpu-cloud-vision-train_vision-train-dev-node" in after_both["roles"]
    assert "gpu-cloud-vision-train_vision-train-prod-node" in after_both["roles"]
    assert account.client("cloudwatch").get_dashboard(
        DashboardName="gpu-cloud-vision-train_vision-train-dev")["DashboardBody"] == dashboard_of_dev["DashboardBody"]


def test_both_stacks_keep_the_project_tag_and_carry_their_own_stack_tag(account):
    deploy(vision_train("vision-train-dev"), account)
    deploy(vision_train("vision-train-prod"), account)
    groups = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    tags = [{tag["Key"]: tag["Value"] for tag in group["Tags"]} for group in groups]
    assert {group["Project"] for group in tags} == {"vision-train"}
    assert {group["gpu-cloud:stack"] for group in tags} == {"vision-train_vision-train-dev", "vision-train_vision-train-prod"}


def test_the_stack_named_after_its_project_keeps_the_short_names(account):
    deploy(vision_train("vision-train"), account)
    assert "gpu-cloud-vision-train-node" in names(account)["roles"]


@pytest.mark.parametrize(("stack", "reason"), [
    ("vision.dev", "may hold only letters, digits, '-' and '_'"),
    ("a-very-long-stack-name-for-prod", "longer than the 40 characters"),
])
def test_stack_names_that_cannot_name_every_resource_are_refused(stack, reason):
    with pytest.raises(ConfigError) as error:
        vision_train(stack)
    assert [(key, why) for key, why in error.value.problems if reason in why and key == "stack name"], error.value.problems
