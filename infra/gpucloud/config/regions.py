"""Which AWS regions exist: the partitions' region lists in botocore's endpoint data, the list the
SDK resolves endpoints from and moto builds its backends for (an offline plan of a region outside
it had no EC2 account to run in)."""

from __future__ import annotations

import functools
import re

import botocore
import botocore.loaders


@functools.cache
def known_regions() -> dict[str, str]:
    """Region -> its partition (`aws`, `aws-cn`, `aws-us-gov`, ...), from botocore's endpoints.json:
    each partition's `regions` map (botocore/data/endpoints.json, read 2026-11-28)."""
    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    return {region: partition["partition"] for partition in endpoints["partitions"] for region in partition["regions"]}


def region_problem(region: str) -> str | None:
    """Why `region` is not an AWS region, naming its known neighbours (`us-east-1, us-east-2` for
    `us-east-9`), or None when botocore's endpoint data lists it."""
    regions = known_regions()
    if region in regions:
        return None
    stem = re.sub(r"-\d+$", "", region)
    neighbours = sorted(name for name in regions if re.sub(r"-\d+$", "", name) == stem)
    hint = f" (the {stem} regions: {', '.join(neighbours)})" if neighbours else ""
    return f"{region!r} is not a region of any AWS partition in botocore {botocore.__version__}'s endpoint data{hint}"
