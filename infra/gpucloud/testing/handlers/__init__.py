"""Resource and invoke handlers, one module per AWS service; importing registers them."""

from gpucloud.testing.handlers import (  # noqa: F401
    autoscaling,
    backup,
    budgets,
    capacity,
    cloudwatch,
    ec2,
    iam,
    invokes,
    kms,
    logs,
    s3,
    sns,
    vpc,
)
