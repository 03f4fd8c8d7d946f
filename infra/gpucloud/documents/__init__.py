"""IAM, KMS, S3 and VPC endpoint policy documents as small pure functions, so they are tested
without any engine: `keys` (the project key's policy), `node` (the node role), `buckets` (what
reaches the stack's buckets), `services` (what AWS services use for the stack).

`Resource: "*"` appears only where AWS offers no resource-level permission for the action; each
such statement says so in its Sid.
"""

from gpucloud.documents.buckets import (
    MOUNTPOINT_RELEASE_BUCKET,
    NODE_S3_ACTIONS,
    access_logs_bucket_policy,
    artifacts_bucket_policy,
    aws_owned_package_buckets,
    mountpoint_release_buckets,
    s3_gateway_endpoint_policy,
)
from gpucloud.documents.keys import KEY_ADMIN_ACTIONS, KEY_USE_ACTIONS, KEY_USE_THROUGH_SERVICES_ACTIONS, key_policy
from gpucloud.documents.node import (
    ec2_assume_role_policy,
    instance_role_policy,
    node_statements,
    prometheus_remote_write_policy,
    s3_prefix_statements,
)
from gpucloud.documents.services import (
    PROMETHEUS_QUERY_ACTIONS,
    TOPIC_PUBLISHERS,
    Document,
    alerts_topic_policy,
    backup_assume_role_policy,
    flow_logs_assume_role_policy,
    flow_logs_role_policy,
    grafana_assume_role_policy,
    grafana_workspace_policy,
)

__all__ = [
    "KEY_ADMIN_ACTIONS",
    "KEY_USE_ACTIONS",
    "KEY_USE_THROUGH_SERVICES_ACTIONS",
    "MOUNTPOINT_RELEASE_BUCKET",
    "NODE_S3_ACTIONS",
    "PROMETHEUS_QUERY_ACTIONS",
    "TOPIC_PUBLISHERS",
    "Document",
    "access_logs_bucket_policy",
    "alerts_topic_policy",
    "artifacts_bucket_policy",
    "aws_owned_package_buckets",
    "backup_assume_role_policy",
    "ec2_assume_role_policy",
    "flow_logs_assume_role_policy",
    "flow_logs_role_policy",
    "grafana_assume_role_policy",
    "grafana_workspace_policy",
    "instance_role_policy",
    "key_policy",
    "mountpoint_release_buckets",
    "node_statements",
    "prometheus_remote_write_policy",
    "s3_gateway_endpoint_policy",
    "s3_prefix_statements",
]
