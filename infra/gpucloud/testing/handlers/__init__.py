"""Resource and invoke handlers, one module per AWS service; importing registers them."""

from gpucloud.testing.handlers import autoscaling, cloudwatch, ec2, iam, invokes, kms  # noqa: F401
