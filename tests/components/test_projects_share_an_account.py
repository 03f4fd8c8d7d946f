"""Two projects whose names are prefixes of each other (`vision` and `vision-train`, the latter at
the longest name base) applied to one account: each node role reaches only its own stack's
groups, volumes, log groups, buckets, key and workspace; the backup names fit AWS Backup; the key
policy names only roles the stack creates; and the groups wait for their way out.

moto's IAM does not enforce policies, so the node roles' documents are read back from the account
and evaluated here: a resource pattern grants an ARN when it matches it as IAM matches (`*` any
run of characters, `?` one) and every resource-tag condition of its statement holds for the
resource's tags. Conditions on other keys are taken as met, so the check errs towards "reaches"."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest

from gpucloud.naming import instance_role_name, name_base
from gpucloud.testing import moto_account
from support import deploy, minimal_config, settings_for

VISION = minimal_config(
    project="vision",
    data={"bucket": "vision-data", "readPrefixes": ["datasets/"], "writePrefixes": ["runs/"]},
    monitoring={"prometheus": {"enabled": True}},
    groups=[{"name": "train", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2}],
)
VISION_TRAIN = minimal_config(
    project="vision-train",
    data={"bucket": "vision-data-train", "readPrefixes": ["datasets/"], "writePrefixes": ["runs/"]},
    monitoring={"prometheus": {"enabled": True}},
    groups=[{"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1,
             "persistentVolumeGiB": 100}],
)
LONG_STACK = "nightly-experiments-2026-q4"
"""With project `vision-train`, the longest name base a stack can have (40 characters)."""


@pytest.fixture(scope="module")
def stacks():
    vision = settings_for(VISION, stack="vision")
    vision_train = settings_for(VISION_TRAIN, stack=LONG_STACK)
    assert len(vision_train.name_base) == 40
    with moto_account("us-east-1") as account:
        yield account, {"vision": deploy(vision, account), "vision-train": deploy(vision_train, account)}


def role_documents(account, base: str) -> list[dict[str, Any]]:
    iam = account.client("iam")
    role = instance_role_name(base)
    return [iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
            for name in iam.list_role_policies(RoleName=role)["PolicyNames"]]


def listed(value) -> list:
    return [value] if isinstance(value, str) else list(value or [])


def tag_conditions_hold(statement: dict, tags: dict[str, str]) -> bool:
    for operator, pairs in (statement.get("Condition") or {}).items():
        for key, values in pairs.items():
            if "ResourceTag/" in key and operator == "StringEquals":
                if tags.get(key.split("ResourceTag/", 1)[1]) not in listed(values):
                    return False
    return True


def grants(documents: list[dict], arn: str, tags: dict[str, str]) -> list[str]:
    """The Sids of Allow statements whose resource patterns and tag conditions reach `arn`."""
    return [
        statement.get("Sid", "?")
        for document in documents
        for statement in listed(document["Statement"])
        if statement["Effect"] == "Allow"
        and any(pattern != "*" and fnmatch.fnmatchcase(arn, pattern) for pattern in listed(statement.get("Resource")))
        and tag_conditions_hold(statement, tags)
    ]


def resources_of(deployment, config: dict, base: str) -> dict[str, dict[str, str]]:
    """Every ARN of one stack a node could act on, with its tags: groups, volumes and workspaces
    by their stack tag, log groups under the stack's prefixes, objects under the data prefixes
    and the agent bundle, the key."""
    account = deployment.account
    found: dict[str, dict[str, str]] = {}
    for group in account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]:
        found[group["AutoScalingGroupARN"]] = {tag["Key"]: tag["Value"] for tag in group["Tags"]}
    for volume in account.client("ec2").describe_volumes()["Volumes"]:
        found[account.arn("ec2", f"volume/{volume['VolumeId']}")] = {tag["Key"]: tag["Value"] for tag in volume.get("Tags", [])}
    for workspace in account.client("amp").list_workspaces()["workspaces"]:
        found[workspace["arn"]] = account.client("amp").list_tags_for_resource(resourceArn=workspace["arn"])["tags"]
    found = {arn: tags for arn, tags in found.items() if tags.get("gpu-cloud:stack") == base}
    prefixes = (f"/gpu-cloud/{base}/", f"/gpu-cloud-vpc/{base}/", f"/gpu-cloud-aps/{base}/")
    for group in account.client("logs").describe_log_groups()["logGroups"]:
        if group["logGroupName"].startswith(prefixes):
            found[group["arn"].removesuffix(":*")] = {}
            found[group["arn"].removesuffix(":*") + ":log-stream:node"] = {}
    data = config["data"]
    for prefix in data["readPrefixes"] + data["writePrefixes"]:
        found[f"arn:aws:s3:::{data['bucket']}/{prefix}probe"] = {}
    artifacts = deployment.outputs["artifactsBucketName"]
    found[f"arn:aws:s3:::{artifacts}/{deployment.outputs['agentBundleKey']}"] = {}
    found[deployment.outputs["kmsKeyArn"]] = {}
    return found


@pytest.mark.parametrize(("mine", "theirs"), [("vision", "vision-train"), ("vision-train", "vision")])
def test_a_node_role_reaches_nothing_of_the_project_whose_name_it_prefixes_or_extends(stacks, mine, theirs):
    account, deployments = stacks
    configs = {"vision": (VISION, "vision"), "vision-train": (VISION_TRAIN, LONG_STACK)}
    base = {name: name_base(config["project"], stack) for name, (config, stack) in configs.items()}
    documents = role_documents(account, base[mine])
    theirs_resources = resources_of(deployments[theirs], configs[theirs][0], base[theirs])
    kinds = {kind for kind in (":autoScalingGroup:", ":volume/", ":log-group:", ":aps:", ":kms:", ":s3:::") if
             any(kind in arn for arn in theirs_resources)}
    assert kinds >= {":autoScalingGroup:", ":log-group:", ":aps:", ":kms:", ":s3:::"}, kinds
    reached = {arn: grants(documents, arn, tags) for arn, tags in theirs_resources.items()}
    assert {arn: sids for arn, sids in reached.items() if sids} == {}
    mine_resources = resources_of(deployments[mine], configs[mine][0], base[mine])
    assert any(grants(documents, arn, tags) for arn, tags in mine_resources.items() if ":autoScalingGroup:" in arn)


def test_the_node_role_completes_the_lifecycle_of_its_own_groups_only_by_name_and_stack_tag(stacks):
    account, _ = stacks
    [statement] = [statement for document in role_documents(account, "vision") for statement in document["Statement"]
                   if statement["Sid"] == "NodeCompletesOwnLifecycle"]
    assert listed(statement["Resource"]) == [
        f"arn:aws:autoscaling:us-east-1:{account.account_id}:autoScalingGroup:*:autoScalingGroupName/gpu-cloud-vision-train"
    ]
    assert statement["Condition"] == {"StringEquals": {"autoscaling:ResourceTag/gpu-cloud:stack": "vision"}}


def test_backup_names_fit_aws_backup_at_the_longest_name_base(stacks):
    account, deployments = stacks
    plans = account.client("backup").list_backup_plans()["BackupPlansList"]
    assert [plan["BackupPlanName"] for plan in plans] == [f"gpu-cloud-vision-train_{LONG_STACK}"]
    [selection] = deployments["vision-train"].of_type("aws:backup/selection:Selection")
    assert len(selection.inputs["name"]) <= 50


def test_the_job_supervisors_names_fit_aws_at_the_longest_name_base(stacks):
    """EventBridge rule names take 64 characters, IAM role names 64, state machine names 80
    (botocore's events, iam and stepfunctions models): the long stack's names are cut to fit and
    still differ from the short stack's."""
    account, _ = stacks
    rules = {rule["Name"] for rule in account.client("events").list_rules()["Rules"]}
    [long_rule] = rules - {"gpu-cloud-vision-jobs-node-left"}
    assert len(rules) == 2 and len(long_rule) == 64 and long_rule.startswith("gpu-cloud-vision-train_") and long_rule.endswith("-jobs-node-left")
    roles = [role["RoleName"] for role in account.client("iam").list_roles()["Roles"] if "-jobs-" in role["RoleName"]]
    assert sorted(roles) == sorted(f"gpu-cloud-{base}-jobs-{kind}" for base in ("vision", f"vision-train_{LONG_STACK}")
                                   for kind in ("role", "events"))
    assert max(len(role) for role in roles) <= 64
    machines = [machine["name"] for machine in account.client("stepfunctions").list_state_machines()["stateMachines"]]
    assert sorted(machines) == ["gpu-cloud-vision-jobs", f"gpu-cloud-vision-train_{LONG_STACK}-jobs"]
    assert max(len(machine) for machine in machines) <= 80


def key_policy_role_arns(account, deployment) -> set[str]:
    policy = json.loads(account.client("kms").get_key_policy(KeyId=deployment.outputs["kmsKeyArn"], PolicyName="default")["Policy"])
    return {arn for statement in policy["Statement"]
            for arn in listed((statement.get("Condition") or {}).get("ArnEquals", {}).get("aws:PrincipalArn"))}


def test_the_key_policy_names_only_roles_the_stack_creates(stacks):
    account, deployments = stacks
    roles = {role["Arn"] for role in account.client("iam").list_roles()["Roles"]}
    vision = key_policy_role_arns(account, deployments["vision"])
    assert vision == {f"arn:aws:iam::{account.account_id}:role/gpu-cloud-vision-{role}" for role in ("node", "jobs-role")}
    backed_up = key_policy_role_arns(account, deployments["vision-train"])
    assert {arn.rsplit("-", 1)[1] for arn in backed_up} == {"node", "backup", "role"}
    assert vision | backed_up <= roles


def test_no_statement_of_the_key_policy_lets_anyone_create_a_grant_for_a_non_aws_resource(stacks):
    account, deployments = stacks
    policy = json.loads(account.client("kms").get_key_policy(KeyId=deployments["vision"].outputs["kmsKeyArn"], PolicyName="default")["Policy"])
    for statement in policy["Statement"]:
        if any(fnmatch.fnmatchcase("kms:CreateGrant", action) for action in listed(statement["Action"])):
            assert statement.get("Condition", {}).get("Bool") == {"kms:GrantIsForAWSResource": "true"}, statement["Sid"]


def test_every_group_waits_for_the_nat_gateway_routes_and_endpoints(stacks):
    _, deployments = stacks
    deployment = deployments["vision"]
    egress_types = {
        "aws:ec2/natGateway:NatGateway", "aws:ec2/route:Route", "aws:ec2/routeTableAssociation:RouteTableAssociation",
        "aws:ec2/vpcEndpoint:VpcEndpoint",
    }
    egress = {resource.urn for resource in deployment.resources if resource.type in egress_types}
    assert any("natGateway" in urn for urn in egress) and any("vpcEndpoint" in urn for urn in egress)
    for group in deployment.of_type("aws:autoscaling/group:Group"):
        assert egress <= waited_for(deployment, group), group.urn


def waited_for(deployment, resource) -> set[str]:
    """The URNs a resource waits for: its own dependencies and, as Pulumi does for a component's
    `depends_on`, those of its ancestors (a child waits for what its parent waits for)."""
    by_urn = {each.urn: each for each in deployment.resources}
    found: set[str] = set()
    current = resource
    while current is not None:
        for urn in current.dependencies:
            found.add(urn)
            found |= {each.urn for each in deployment.resources if each.parent == urn or _under(by_urn, each, urn)}
        current = by_urn.get(current.parent) if current.parent else None
    return found


def _under(by_urn, resource, ancestor: str) -> bool:
    parent = resource.parent
    while parent:
        if parent == ancestor:
            return True
        parent = by_urn[parent].parent if parent in by_urn else None
    return False


def endpoint_policy_allows(policy: dict, action: str, arn: str, principal_account: str | None) -> bool:
    """Whether an Allow of the gateway endpoint's policy covers the request (no Deny is used)."""
    for statement in listed(policy["Statement"]):
        condition = (statement.get("Condition") or {}).get("StringEquals", {})
        if "aws:PrincipalAccount" in condition and principal_account not in listed(condition["aws:PrincipalAccount"]):
            continue
        if any(fnmatch.fnmatchcase(action, pattern) for pattern in listed(statement["Action"])) and any(
                fnmatch.fnmatchcase(arn, pattern) for pattern in listed(statement["Resource"])):
            return True
    return False


def test_the_s3_gateway_endpoint_passes_only_the_stacks_buckets_and_aws_package_downloads(stacks):
    account, deployments = stacks
    outputs = deployments["vision"].outputs
    [endpoint_id] = [resource.id for resource in deployments["vision"].of_type("aws:ec2/vpcEndpoint:VpcEndpoint")
                     if resource.inputs["serviceName"] == "com.amazonaws.us-east-1.s3"]
    [endpoint] = account.client("ec2").describe_vpc_endpoints(VpcEndpointIds=[endpoint_id])["VpcEndpoints"]
    policy = json.loads(endpoint["PolicyDocument"])
    me, other = account.account_id, "999988887777"

    assert endpoint_policy_allows(policy, "s3:PutObject", "arn:aws:s3:::vision-data/runs/step-1.pt", me)
    assert endpoint_policy_allows(policy, "s3:GetObject", f"arn:aws:s3:::{outputs['artifactsBucketName']}/agent/x.zip", me)
    assert endpoint_policy_allows(
        policy, "s3:GetObject",
        "arn:aws:s3:::amazoncloudwatch-agent-us-east-1/ubuntu/amd64/latest/amazon-cloudwatch-agent.deb", None)
    assert not endpoint_policy_allows(policy, "s3:PutObject", "arn:aws:s3:::vision-data/runs/step-1.pt", other)
    assert not endpoint_policy_allows(policy, "s3:PutObject", "arn:aws:s3:::somebody-elses-bucket/x", me)
    assert not endpoint_policy_allows(policy, "s3:PutObject", "arn:aws:s3:::amazoncloudwatch-agent-us-east-1/x", None)
    assert not endpoint_policy_allows(policy, "s3:PutObject", "arn:aws:s3:::vision-data-train/runs/x", me)


def test_the_artifacts_bucket_logs_every_request_and_lets_old_bundles_expire(stacks):
    from gpucloud.backend import state_lifecycle_rule

    account, deployments = stacks
    s3 = account.client("s3")
    bucket = deployments["vision"].outputs["artifactsBucketName"]
    logging = s3.get_bucket_logging(Bucket=bucket)["LoggingEnabled"]
    log_bucket = logging["TargetBucket"]
    assert log_bucket.startswith("gpu-cloud-logs-vision-") and logging["TargetPrefix"] == "artifacts/"
    [rule] = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    state = state_lifecycle_rule()
    assert (rule["Status"], rule["NoncurrentVersionExpiration"], rule["AbortIncompleteMultipartUpload"]) == (
        "Enabled", state["NoncurrentVersionExpiration"], state["AbortIncompleteMultipartUpload"])
    [log_rule] = s3.get_bucket_lifecycle_configuration(Bucket=log_bucket)["Rules"]
    assert log_rule["Expiration"]["Days"] == 365
    [encryption] = s3.get_bucket_encryption(Bucket=log_bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert encryption["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    [policy] = [resource for resource in deployments["vision"].of_type("aws:s3/bucketPolicy:BucketPolicy")
                if resource.inputs["bucket"] == log_bucket]
    [delivery] = [s for s in json.loads(policy.inputs["policy"])["Statement"] if s["Effect"] == "Allow"]
    assert delivery["Principal"] == {"Service": "logging.s3.amazonaws.com"}
    assert delivery["Condition"]["ArnLike"] == {"aws:SourceArn": f"arn:aws:s3:::{bucket}"}
