"""Resource and invoke handlers, one module per AWS service; importing registers them."""

from gpucloud.testing.handlers import (  # noqa: F401
    amp,
    autoscaling,
    backup,
    budgets,
    capacity,
    cloudwatch,
    ec2,
    elbv2,
    fsx,
    grafana,
    iam,
    invokes,
    kms,
    logs,
    s3,
    sfn,
    sns,
    ssm,
    ssm_parameter,
    vpc,
)
