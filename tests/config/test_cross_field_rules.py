"""The loader runs every section's cross-field rules (`gpucloud.config.rules`) and reports all their
problems at once, in one fixed order: the network, the services, the jobs, the storage, the
endpoint, the image (then cold start, the node role's quota and the allocation)."""

from support import config_problems, minimal_config


def test_problems_of_several_sections_come_together_in_the_loaders_order():
    values = minimal_config(
        network={"egress": "endpointsOnly"},
        storage={"s3Mount": {"install": "download"}},
        groups=[{
            "name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2,
            "image": {"provides": ["docker"]},
            "services": {"jupyter": {"install": "pip"},
                         "containers": [{"name": "web", "image": "nginx:1.27", "port": 8080}]},
            "jobs": {"ecrRepositories": ["123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/train"]},
            "endpoint": {"port": 9000, "allowedCidrs": ["10.0.0.0/8"]},
        }],
    )
    assert [key for key, _ in config_problems(values)] == [
        "gpu-cloud:network.interfaceEndpoints",
        "gpu-cloud:groups[0].services.jupyter.install",
        "gpu-cloud:groups[0].services.containers[0].image",
        "gpu-cloud:groups[0].jobs.ecrRepositories[0]",
        "gpu-cloud:storage.s3Mount.install",
        "gpu-cloud:groups[0].endpoint.port",
        "gpu-cloud:groups[0].image.provides",
    ]
