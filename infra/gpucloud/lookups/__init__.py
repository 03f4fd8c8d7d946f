"""The rules that need AWS facts, checked before any resource is declared.

`facts` says what is asked (instance types, subnets, AMIs), `pulumi_aws` asks it through pulumi-aws
data sources (so `pulumi preview` checks the real account), and `resolve` turns validated settings
plus those facts into what the components are built from. `pulumi_aws` is imported on its own
(`from gpucloud.lookups.pulumi_aws import PulumiAwsLookups`): it loads the provider SDK.
"""

from gpucloud.lookups.facts import (
    DEEP_LEARNING_AMI_PARAMETER,
    Ami,
    AwsLookups,
    InstanceTypeFacts,
    LookupUnavailable,
    PrometheusWorkspace,
    Subnet,
)
from gpucloud.lookups.resolve import ResolvedGroup, ResolvedStack, resolve_stack

__all__ = [
    "DEEP_LEARNING_AMI_PARAMETER",
    "Ami",
    "AwsLookups",
    "InstanceTypeFacts",
    "LookupUnavailable",
    "PrometheusWorkspace",
    "ResolvedGroup",
    "ResolvedStack",
    "Subnet",
    "resolve_stack",
]
