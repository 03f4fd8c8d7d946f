"""Entry point for `pulumi preview/up` (Pulumi.yaml `main: infra/`)."""

from gpucloud.program import main

main()
