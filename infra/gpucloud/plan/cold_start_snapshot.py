"""What `account snapshot` records for the cold-start budget: the size of each container image the
stack runs from this account's ECR, as DescribeImages answers it.

`imageSizeInBytes` is "the size, in bytes, of the image in the repository": the compressed layers a
pull downloads ("Beginning with Docker version 1.9, the Docker client compresses image layers before
pushing them", so `docker images` shows a larger, uncompressed size; ECR API reference, ImageDetail,
read 2026-11-28). A missing image or repository is left out: the plan then pulls nothing for it and
says its size is not known.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from gpucloud.config import StackSettings

NOT_FOUND = ("ImageNotFoundException", "RepositoryNotFoundException")


def ecr_image_sizes(session, settings: StackSettings, account_id: str) -> dict[str, int]:
    """image reference -> imageSizeInBytes, for the containers' images in this account's ECR."""
    sizes: dict[str, int] = {}
    for group in settings.config.groups:
        for container in group.services.containers:
            match = container.ecr
            if match is None or match["account"] != account_id or container.image in sizes:
                continue
            reference = container.image.rsplit("@", 1)[1] if "@" in container.image else container.image.rsplit(":", 1)[1]
            image_id = {"imageDigest": reference} if "@" in container.image else {"imageTag": reference}
            ecr = session.client("ecr", region_name=match["region"])
            try:
                details = ecr.describe_images(registryId=account_id, repositoryName=match["repository"],
                                              imageIds=[image_id])["imageDetails"]
            except ClientError as error:
                if error.response["Error"]["Code"] in NOT_FOUND:
                    continue
                raise
            if details and details[0].get("imageSizeInBytes"):
                sizes[container.image] = int(details[0]["imageSizeInBytes"])
    return dict(sorted(sizes.items()))
