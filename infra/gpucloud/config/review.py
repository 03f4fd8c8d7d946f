"""What a stack file says a reviewer has accepted: `gpu-cloud:intendedReplacements`.

`gpucloud plan --base REF` fails when a change replaces or deletes a resource that holds data or
identity (a persistent volume, the KMS key, a bucket, a backup vault, a Capacity Block purchase).
A change that means to do it lists those resources here by the name the diff prints, e.g.

    gpu-cloud:intendedReplacements:
      - notebooks-workbench-persist-volume

and the diff reports them as intended instead. An entry the change does not need is warned about:
left in the file, it would let a later replacement of the same resource through unreviewed.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from gpucloud.config.fields import shaped


def _unique(names: list[str]) -> list[str]:
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"lists {', '.join(repeated)} more than once")
    return names


PulumiResourceName = Annotated[
    str,
    shaped(r"[A-Za-z0-9][A-Za-z0-9._-]*", "use the resource name `gpucloud plan --base` prints (letters, digits, . _ -)", 200),
]

IntendedReplacements = Annotated[list[PulumiResourceName], Field(max_length=100), AfterValidator(_unique)]
"""Resource names whose replacement or deletion the change intends (default: none)."""
