"""The node role's grants for container services' `secretEnv`, evaluated as AWS would: the named
parameters and secrets only, and kms:Decrypt only through the service that serves each one, for
that value, whichever key of the account encrypts it."""

from __future__ import annotations

from gpucloud.documents.node_services import container_secret_statements
from gpucloud.policy.access import Call, Documents, evaluate

ACCOUNT = "111122223333"
REGION = "us-east-1"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/gpu-cloud-llm-node"
CUSTOMER_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
PARAMETER = f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/team/hf-token"
SECRET = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:team/wandb-Ab12Cd"
KEY_POLICY_ENABLING_IAM = {"Version": "2012-10-17", "Statement": [{
    "Sid": "EnableIamPolicies", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
    "Action": "kms:*", "Resource": "*"}]}
"""The default key policy of a customer managed key (KMS developer guide, "Default key policy")."""


def node_documents() -> Documents:
    role_policy = {"Version": "2012-10-17", "Statement": container_secret_statements(
        "aws", REGION, ACCOUNT, parameter_names=["/team/hf-token"], secret_ids=["team/wandb"])}
    return Documents(identity={ROLE: [role_policy]}, resource=[(CUSTOMER_KEY, KEY_POLICY_ENABLING_IAM)],
                     endpoints={}, account=ACCOUNT)


def allowed(action: str, resource: str, context: dict | None = None) -> bool:
    call = Call(actor="node", principal=ROLE, action=action, resource=resource, context=context or {}, endpoint=None)
    return evaluate(call, node_documents()).allowed


def through(service: str, **context: str) -> dict:
    return {"kms:ViaService": f"{service}.{REGION}.amazonaws.com", "kms:CallerAccount": ACCOUNT, **context}


def test_the_node_reads_and_decrypts_the_named_parameter_through_ssm_only():
    assert allowed("ssm:GetParameter", PARAMETER)
    assert allowed("kms:Decrypt", CUSTOMER_KEY, through("ssm", **{"kms:EncryptionContext:PARAMETER_ARN": PARAMETER}))
    assert not allowed("ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/team/other")
    assert not allowed("kms:Decrypt", CUSTOMER_KEY, through(
        "ssm", **{"kms:EncryptionContext:PARAMETER_ARN": f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/team/other"}))
    assert not allowed("kms:Decrypt", CUSTOMER_KEY, {"kms:CallerAccount": ACCOUNT}), "never directly"


def test_the_node_reads_the_named_secret_whatever_its_arn_suffix_and_nothing_else():
    assert allowed("secretsmanager:GetSecretValue", SECRET)
    assert allowed("kms:Decrypt", CUSTOMER_KEY, through("secretsmanager", **{"kms:EncryptionContext:SecretARN": SECRET}))
    longer_name = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:team/wandb-admin-Ab12Cd"
    assert not allowed("secretsmanager:GetSecretValue", longer_name)
    assert not allowed("kms:Decrypt", CUSTOMER_KEY, through("ssm", **{"kms:EncryptionContext:SecretARN": SECRET})), (
        "a secret's context through ssm is not a decrypt Secrets Manager asked for")


def test_no_secret_env_no_statement():
    assert container_secret_statements("aws", REGION, ACCOUNT) == []


def test_a_secret_given_by_arn_is_granted_as_given():
    statements = container_secret_statements("aws", REGION, ACCOUNT, secret_ids=[SECRET])
    assert statements[0]["Resource"] == [SECRET]
