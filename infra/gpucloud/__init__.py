"""gpu-cloud: per-project GPU environments on AWS as Pulumi components.

Components live one per module (`gpucloud.gpu_group.GpuInstanceGroup`, ...); the moto-backed
engine is `gpucloud.testing`; the command line is `gpucloud.cli`. Importing this package loads
nothing else, so `import gpucloud` stays instant.
"""

__version__ = "0.1.0"
