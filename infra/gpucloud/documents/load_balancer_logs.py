"""The bucket policy that lets Elastic Load Balancing deliver a load balancer's access logs.

Who writes the logs depends on the region (Elastic Load Balancing user guide, "Enable access logs
for your Application Load Balancer", step 2, https://docs.aws.amazon.com/elasticloadbalancing/latest/
application/enable-access-logging.html, read 2026-11-25): in regions available before August 2022
the regional Elastic Load Balancing account, named by its id; in later regions the log delivery
service principal `logdelivery.elasticloadbalancing.amazonaws.com`. The account ids below match,
region by region, terraform-provider-aws's `accountIDPerRegionMap` in
internal/service/elb/service_account_data_source.go (commit 01f4311, compared 2026-11-25; the China
partition's two are left out).
"""

from __future__ import annotations

from gpucloud.bucket_rules import tls_only_statement
from gpucloud.documents.services import Document

ELB_ACCOUNT_IDS = {
    "us-east-1": "127311923021", "us-east-2": "033677994240", "us-west-1": "027434742980",
    "us-west-2": "797873946194", "af-south-1": "098369216593", "ap-east-1": "754344448648",
    "ap-southeast-3": "589379963580", "ap-south-1": "718504428378", "ap-northeast-3": "383597477331",
    "ap-northeast-2": "600734575887", "ap-southeast-1": "114774131450", "ap-southeast-2": "783225319266",
    "ap-northeast-1": "582318560864", "ca-central-1": "985666609251", "eu-central-1": "054676820928",
    "eu-west-1": "156460612806", "eu-west-2": "652711504416", "eu-south-1": "635631232127",
    "eu-west-3": "009996457667", "eu-north-1": "897822967062", "me-south-1": "076674570225",
    "sa-east-1": "507241528517", "us-gov-west-1": "048591011584", "us-gov-east-1": "190560391635",
}
"""The regional Elastic Load Balancing accounts of the regions available before August 2022 (the
guide's table, same page)."""

LOG_DELIVERY_SERVICE = "logdelivery.elasticloadbalancing.amazonaws.com"


def log_writer(region: str, partition: str = "aws") -> dict[str, str]:
    """The principal that delivers a load balancer's access logs in `region`."""
    account = ELB_ACCOUNT_IDS.get(region)
    if account:
        return {"AWS": f"arn:{partition}:iam::{account}:root"}
    return {"Service": LOG_DELIVERY_SERVICE}


def load_balancer_logs_bucket_policy(bucket_arn: str, prefix: str, account_id: str, region: str, partition: str = "aws") -> Document:
    """TLS only, and the region's log writer may put objects only under
    `<prefix>/AWSLogs/<account>/`, where Elastic Load Balancing writes this account's logs."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            tls_only_statement(bucket_arn),
            {
                "Sid": "ElasticLoadBalancingWritesAccessLogs",
                "Effect": "Allow",
                "Principal": log_writer(region, partition),
                "Action": "s3:PutObject",
                "Resource": f"{bucket_arn}/{prefix}/AWSLogs/{account_id}/*",
            },
        ],
    }
