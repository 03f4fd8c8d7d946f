"""The policy document builders, as pure functions: who may use the key, and how, and what S3 access the node gets."""

from __future__ import annotations

from gpucloud.documents import key_policy, mountpoint_release_buckets, s3_gateway_endpoint_policy, s3_prefix_statements

ACCOUNT = "111122223333"
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
NODE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/gpu-cloud-ml-node"
BACKUP_ROLE = f"arn:aws:iam::{ACCOUNT}:role/gpu-cloud-ml-backup"
AUTOSCALING = f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
DIRECT_USE = {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"}


def statements_by_sid(document: dict) -> dict[str, dict]:
    return {statement["Sid"]: statement for statement in document["Statement"]}


def actions(statement: dict) -> set[str]:
    listed = statement["Action"]
    return {listed} if isinstance(listed, str) else set(listed)


def test_key_policy_has_exactly_its_statements_and_principals():
    policy = statements_by_sid(key_policy("aws", ACCOUNT, "eu-west-1", ["gpu-cloud-ml-node", "gpu-cloud-ml-backup"]))

    assert {sid: statement["Principal"] for sid, statement in policy.items()} == {
        "AccountAdministersKey": {"AWS": ROOT},
        "ProjectInstanceRolesUseKey": {"AWS": ROOT},
        "ProjectInstanceRolesAttachEncryptedVolumes": {"AWS": ROOT},
        "AccountUsesKeyOnlyThroughAwsServices": {"AWS": ROOT},
        "AccountGrantsOnlyForAwsResourcesThroughAwsServices": {"AWS": ROOT},
        "AutoScalingLaunchesEncryptedVolumes": {"AWS": AUTOSCALING},
        "AlarmAndBudgetServicesPublishToEncryptedTopic": {"Service": ["cloudwatch.amazonaws.com", "budgets.amazonaws.com"]},
        "AutoScalingAttachesEncryptedVolumes": {"AWS": AUTOSCALING},
    }
    assert all(statement["Effect"] == "Allow" and statement["Resource"] == "*" for statement in policy.values())
    assert all("kms:*" not in actions(statement) for statement in policy.values())


def test_only_the_named_roles_and_autoscaling_decrypt_directly():
    policy = statements_by_sid(key_policy("aws", ACCOUNT, "eu-west-1", ["gpu-cloud-ml-node", "gpu-cloud-ml-backup"]))

    assert actions(policy["AccountAdministersKey"]) & DIRECT_USE == set()
    assert policy["ProjectInstanceRolesUseKey"]["Condition"] == {"ArnEquals": {"aws:PrincipalArn": [NODE_ROLE, BACKUP_ROLE]}}
    assert DIRECT_USE <= actions(policy["AutoScalingLaunchesEncryptedVolumes"])
    services = policy["AlarmAndBudgetServicesPublishToEncryptedTopic"]
    assert services["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT}}
    assert actions(services) == {"kms:Decrypt", "kms:GenerateDataKey*"}


def test_deployers_use_the_key_only_through_ec2_backup_and_s3_in_its_region():
    """Creating the persistent volume, the backup vault and the agent bundle object needs these
    calls of whoever runs `pulumi up`."""
    through_services = statements_by_sid(key_policy("aws", ACCOUNT, "eu-west-1", ["gpu-cloud-ml-node"]))[
        "AccountUsesKeyOnlyThroughAwsServices"
    ]

    assert actions(through_services) == {
        "kms:Decrypt",
        "kms:DescribeKey",
        "kms:GenerateDataKey*",
        "kms:ReEncrypt*",
        "kms:RetireGrant",
    }
    assert through_services["Condition"] == {
        "StringEquals": {
            "kms:CallerAccount": ACCOUNT,
            "kms:ViaService": [
                "ec2.eu-west-1.amazonaws.com", "backup.eu-west-1.amazonaws.com", "s3.eu-west-1.amazonaws.com",
            ],
        }
    }


def test_grants_are_only_for_aws_resources():
    policy = statements_by_sid(key_policy("aws", ACCOUNT, "us-east-1", ["gpu-cloud-ml-node"]))

    for sid in ("ProjectInstanceRolesAttachEncryptedVolumes", "AutoScalingAttachesEncryptedVolumes",
                "AccountGrantsOnlyForAwsResourcesThroughAwsServices"):
        assert actions(policy[sid]) == {"kms:CreateGrant"}
        assert policy[sid]["Condition"]["Bool"] == {"kms:GrantIsForAWSResource": "true"}
    through_services = policy["AccountGrantsOnlyForAwsResourcesThroughAwsServices"]["Condition"]["StringEquals"]
    assert through_services == policy["AccountUsesKeyOnlyThroughAwsServices"]["Condition"]["StringEquals"]


def test_the_account_administers_the_key_without_any_wildcard_that_grants_use():
    """`kms:Create*` also granted kms:CreateGrant, with no kms:GrantIsForAWSResource."""
    admin = actions(statements_by_sid(key_policy("aws", ACCOUNT, "us-east-1", ["gpu-cloud-ml-node"]))["AccountAdministersKey"])

    assert not any("*" in action for action in admin)
    assert "kms:CreateGrant" not in admin and {"kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:CreateAlias"} <= admin


def test_key_policy_names_the_partition_of_its_account():
    policy = statements_by_sid(key_policy("aws-cn", ACCOUNT, "cn-north-1", ["gpu-cloud-ml-node"]))

    assert policy["AccountAdministersKey"]["Principal"] == {"AWS": f"arn:aws-cn:iam::{ACCOUNT}:root"}
    assert policy["AccountUsesKeyOnlyThroughAwsServices"]["Condition"]["StringEquals"]["kms:ViaService"] == [
        "ec2.cn-north-1.amazonaws.com",
        "backup.cn-north-1.amazonaws.com",
        "s3.cn-north-1.amazonaws.com",
    ]


def test_prefix_access_lists_reads_and_writes_only_under_its_prefixes():
    statements = statements_by_sid(
        {"Statement": s3_prefix_statements("aws", "ml-data", ["datasets/"], ["runs/ml/", "models/"])}
    )

    assert statements["ListOnlyGrantedPrefixes"] == {
        "Sid": "ListOnlyGrantedPrefixes",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::ml-data",
        "Condition": {"StringLike": {"s3:prefix": ["datasets/*", "models/*", "runs/ml/*"]}},
    }
    assert statements["ReadGrantedPrefixes"]["Resource"] == [
        "arn:aws:s3:::ml-data/datasets/*",
        "arn:aws:s3:::ml-data/models/*",
        "arn:aws:s3:::ml-data/runs/ml/*",
    ]
    assert statements["WriteGrantedPrefixes"]["Resource"] == ["arn:aws:s3:::ml-data/models/*", "arn:aws:s3:::ml-data/runs/ml/*"]
    assert all(action.startswith("s3:") and "*" not in action for s in statements.values() for action in actions(s))


def test_read_only_access_has_no_write_statement():
    statements = s3_prefix_statements("aws", "ml-data", ["datasets/"], [])

    assert [statement["Sid"] for statement in statements] == ["ListOnlyGrantedPrefixes", "ReadGrantedPrefixes"]


def test_parameter_store_may_use_the_key_for_the_named_parameters_only():
    """A standard SecureString is encrypted and decrypted under the key with the caller's
    credentials, through ssm.<region>, the parameter's ARN as encryption context."""
    token = f"arn:aws:ssm:eu-west-1:{ACCOUNT}:parameter/gpu-cloud/ml/notebook/jupyter-token"
    plain = statements_by_sid(key_policy("aws", ACCOUNT, "eu-west-1", ["gpu-cloud-ml-node"]))
    with_token = statements_by_sid(key_policy("aws", ACCOUNT, "eu-west-1", ["gpu-cloud-ml-node"], parameter_arns=[token]))

    assert "AccountUsesKeyForStackParametersOnlyThroughParameterStore" not in plain
    statement = with_token["AccountUsesKeyForStackParametersOnlyThroughParameterStore"]
    assert statement["Principal"] == {"AWS": ROOT} and actions(statement) == {"kms:Decrypt", "kms:Encrypt"}
    assert statement["Condition"] == {"StringEquals": {
        "kms:CallerAccount": ACCOUNT,
        "kms:ViaService": "ssm.eu-west-1.amazonaws.com",
        "kms:EncryptionContext:PARAMETER_ARN": [token],
    }}


def test_the_s3_gateway_endpoint_admits_the_mount_s3_release_only_when_asked_and_in_its_region():
    def unsigned_reads(policy):
        return [arn for statement in policy["Statement"] if "Condition" not in statement for arn in statement["Resource"]]

    plain = s3_gateway_endpoint_policy("aws", ACCOUNT, "us-east-1", ["ml-data"])
    download = s3_gateway_endpoint_policy("aws", ACCOUNT, "us-east-1", ["ml-data"],
                                          mountpoint_release_buckets("aws", "us-east-1"))

    assert "arn:aws:s3:::mountpoint-s3-release/*" not in unsigned_reads(plain)
    assert "arn:aws:s3:::mountpoint-s3-release/*" in unsigned_reads(download)
    assert mountpoint_release_buckets("aws", "eu-west-1") == mountpoint_release_buckets("aws-cn", "cn-north-1") == []


def test_interface_endpoints_admit_only_the_account_and_kms_only_the_project_key():
    from gpucloud.documents.endpoints import interface_endpoint_policy, services_without_policy

    key = f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    [logs] = interface_endpoint_policy("logs", ACCOUNT, key)["Statement"]
    [kms] = interface_endpoint_policy("kms", ACCOUNT, key)["Statement"]

    assert logs == {"Sid": "AccountPrincipalsOnly", "Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*",
                    "Condition": {"StringEquals": {"aws:PrincipalAccount": ACCOUNT}}}
    assert kms["Resource"] == key and kms["Condition"] == logs["Condition"]
    assert services_without_policy() == {"ssmmessages", "ec2messages"}
    assert interface_endpoint_policy("ssmmessages", ACCOUNT) is None, "AWS refuses a policy there"


def test_each_service_role_trusts_only_its_service_and_flow_logs_only_for_this_account():
    from gpucloud.documents import backup_assume_role_policy, ec2_assume_role_policy, flow_logs_assume_role_policy

    def trust(document: dict) -> tuple:
        [statement] = document["Statement"]
        return statement["Effect"], statement["Principal"], statement["Action"], statement.get("Condition")

    assert trust(ec2_assume_role_policy()) == ("Allow", {"Service": "ec2.amazonaws.com"}, "sts:AssumeRole", None)
    assert trust(backup_assume_role_policy()) == ("Allow", {"Service": "backup.amazonaws.com"}, "sts:AssumeRole", None)
    assert trust(flow_logs_assume_role_policy("aws", "eu-west-1", ACCOUNT)) == (
        "Allow", {"Service": "vpc-flow-logs.amazonaws.com"}, "sts:AssumeRole",
        {"StringEquals": {"aws:SourceAccount": ACCOUNT},
         "ArnLike": {"aws:SourceArn": f"arn:aws:ec2:eu-west-1:{ACCOUNT}:vpc-flow-log/*"}})


def test_a_service_trust_is_held_to_a_source_only_when_both_account_and_resource_are_named():
    from gpucloud.documents.services import service_trust_policy

    def condition(**source):
        return service_trust_policy("delivery.logs.amazonaws.com", **source)["Statement"][0].get("Condition")

    assert condition() is None
    assert condition(account_id=ACCOUNT) is None
    assert condition(source_arn="arn:aws:logs:*") is None
    assert condition(account_id=ACCOUNT, source_arn="arn:aws:logs:*") == {
        "StringEquals": {"aws:SourceAccount": ACCOUNT}, "ArnLike": {"aws:SourceArn": "arn:aws:logs:*"}}


def test_nodes_remote_write_to_the_project_workspace_only():
    from gpucloud.documents import prometheus_remote_write_policy

    workspace = f"arn:aws:aps:eu-west-1:{ACCOUNT}:workspace/ws-1"
    assert prometheus_remote_write_policy(workspace)["Statement"] == [
        {"Sid": "RemoteWriteToProjectWorkspace", "Effect": "Allow", "Action": "aps:RemoteWrite", "Resource": workspace}]


def test_a_node_role_without_group_names_keeps_every_grant_but_the_lifecycle_one():
    from gpucloud.documents import node_statements

    key = f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/k"
    with_groups = [statement["Sid"] for statement in node_statements("aws", "eu-west-1", ACCOUNT, "ml", key, True, ["gpu-cloud-ml-a"])]
    without = [statement["Sid"] for statement in node_statements("aws", "eu-west-1", ACCOUNT, "ml", key, True, [])]

    assert "NodeCompletesOwnLifecycle" in with_groups
    assert without == [sid for sid in with_groups if sid != "NodeCompletesOwnLifecycle"]


def test_load_balancer_logs_are_written_by_the_regional_account_or_by_the_log_delivery_service():
    from gpucloud.documents.load_balancer_logs import load_balancer_logs_bucket_policy

    def writer(region: str) -> dict:
        bucket = "arn:aws:s3:::logs"
        [statement] = [item for item in load_balancer_logs_bucket_policy(bucket, "alb", ACCOUNT, region)["Statement"]
                       if item["Sid"] == "ElasticLoadBalancingWritesAccessLogs"]
        assert statement["Resource"] == f"{bucket}/alb/AWSLogs/{ACCOUNT}/*"
        return statement["Principal"]

    assert writer("eu-west-1") == {"AWS": "arn:aws:iam::156460612806:root"}
    assert writer("eu-central-2") == {"Service": "logdelivery.elasticloadbalancing.amazonaws.com"}


def test_the_job_step_may_run_48_hours_and_only_the_job_id_must_be_given():
    from gpucloud.documents.jobs import job_document

    document = job_document()
    [step] = document["mainSteps"]
    assert step["inputs"]["timeoutSeconds"] == "172800", "the aws:runShellScript maximum; the default hour ends real runs"
    required = sorted(name for name, parameter in document["parameters"].items() if "default" not in parameter)
    assert required == ["job"], "launch-stop sends only action and job"
    assert document["parameters"]["nodes"]["default"] == "" and document["parameters"]["port"]["default"] == "29500"


def test_a_job_parameter_ssm_would_refuse_is_named_with_its_pattern_and_a_long_value_is_shortened():
    from gpucloud.documents.jobs import JOB_PARAMETERS, parameter_problem

    assert parameter_problem("port", "29500") is None
    assert parameter_problem("port", "80") == f"port '80' does not match the job document's allowedPattern {JOB_PARAMETERS['port'][0]}"
    sixty = "A" * 60
    assert f"image '{sixty}' does not" not in parameter_problem("image", sixty + " ")
    assert parameter_problem("image", sixty + " ").startswith(f"image '{'A' * 57}...' does not")
    assert parameter_problem("job", "J" * 60).startswith(f"job '{'J' * 60}' does not")


def job_runner(**options):
    from gpucloud.documents.jobs import job_runner_policy

    arguments = {"partition": "aws", "region": "eu-west-1", "account_id": ACCOUNT, "name_base": "ml", "document_name": "ml-run",
                 "log_group_name": "/gpu-cloud/ml/jobs", "group_names": ["gpu-cloud-ml-a"], "key_arn": "arn:aws:kms:eu-west-1:1:key/k"}
    return {statement.get("Sid", ""): statement for statement in job_runner_policy(**arguments | options)["Statement"]}


def test_the_job_runner_reads_and_writes_job_records_only_with_a_bucket_and_a_jobs_prefix():
    assert "JobRecordsUnderWritePrefix" not in job_runner(bucket="data")
    assert "JobRecordsUnderWritePrefix" not in job_runner(jobs_prefix="runs/jobs/")
    records = job_runner(bucket="data", jobs_prefix="runs/jobs/")["JobRecordsUnderWritePrefix"]
    assert records["Resource"] == "arn:aws:s3:::data/runs/jobs/*"


def test_the_job_runner_drives_the_supervisor_only_when_the_stack_has_one():
    def actions(policy: dict) -> set[str]:
        listed = [statement["Action"] for statement in policy.values()]
        return {action for item in listed for action in ([item] if isinstance(item, str) else item)}

    assert not {action for action in actions(job_runner()) if action.startswith("states:")}
    assert {action for action in actions(job_runner(supervisor_name="ml-jobs")) if action.startswith("states:")}


def test_job_records_go_under_the_first_write_prefix():
    from gpucloud.documents.jobs import jobs_prefix

    assert jobs_prefix(["runs/a/", "runs/b/"]) == "runs/a/jobs/" and jobs_prefix([]) is None


def test_the_artifacts_bucket_is_tls_only_and_its_objects_readable_by_the_named_roles_only():
    from gpucloud.documents import artifacts_bucket_policy

    bucket = "arn:aws:s3:::ml-artifacts"
    tls, readers = artifacts_bucket_policy(bucket, [NODE_ROLE, NODE_ROLE, BACKUP_ROLE])["Statement"]
    assert tls["Effect"] == "Deny" and tls["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert readers["Effect"] == "Deny" and readers["Resource"] == f"{bucket}/*"
    assert readers["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": sorted({NODE_ROLE, BACKUP_ROLE})}}


def test_s3_log_delivery_writes_only_the_source_bucket_s_logs_of_this_account_under_its_prefix():
    from gpucloud.documents import access_logs_bucket_policy

    _tls, delivery = access_logs_bucket_policy("arn:aws:s3:::logs", "arn:aws:s3:::ml-artifacts", ACCOUNT, "artifacts/")["Statement"]
    assert delivery["Principal"] == {"Service": "logging.s3.amazonaws.com"} and delivery["Action"] == "s3:PutObject"
    assert delivery["Resource"] == "arn:aws:s3:::logs/artifacts/*"
    assert delivery["Condition"] == {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::ml-artifacts"},
                                     "StringEquals": {"aws:SourceAccount": ACCOUNT}}
