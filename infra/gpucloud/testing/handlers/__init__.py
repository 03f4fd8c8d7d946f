"""Resource and invoke handlers, one module per AWS service; importing registers them."""

from gpucloud.testing.handlers import autoscaling, backup, budgets, cloudwatch, ec2, iam, invokes, kms, sns  # noqa: F401
