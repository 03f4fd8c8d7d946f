"""The data a plan diff is made of: each resource's change, its changed properties, the diff as a
whole, and the resource types whose replacement loses data.

The bottom of the diff modules: `diff` builds these, `diff_findings`, `change_order` and
`diff_documents` read them, and this module imports none of them, so the imports run one way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpucloud.plan.model import Plan, PlanFinding
from gpucloud.testing import AppliedResource

DATA_RESOURCES = {
    "aws:ebs/volume:Volume": "a persistent EBS volume: its data does not move to the new volume",
    "aws:kms/key:Key": "the project's KMS key: what it encrypted (volumes, snapshots, logs, backups) stays bound to the old key",
    "aws:s3/bucket:Bucket": "an S3 bucket: its objects do not move to the new bucket",
    "aws:s3/bucketV2:BucketV2": "an S3 bucket: its objects do not move to the new bucket",
    "aws:efs/fileSystem:FileSystem": "a file system: its files do not move to the new one",
    "aws:fsx/lustreFileSystem:LustreFileSystem": "a file system: its files do not move to the new one",
    "aws:backup/vault:Vault": "a backup vault: its recovery points stay with the old vault",
    "aws:ec2/capacityBlockReservation:CapacityBlockReservation":
        "a Capacity Block purchase: paid up front and not refundable, a new one is a second purchase",
}
"""Resource types that hold data or an identity others depend on: replacing or deleting one is a
mandatory violation unless the stack file lists it under `gpu-cloud:intendedReplacements`."""

GROUP_TYPE = "aws:autoscaling/group:Group"
LAUNCH_TEMPLATE_TYPE = "aws:ec2/launchTemplate:LaunchTemplate"


@dataclass(frozen=True)
class PropertyChange:
    """One changed input property: its path (`tags.Owner`, `blockDeviceMappings[0].ebs.volumeSize`)."""

    path: str
    old: Any
    new: Any
    forces_replacement: bool = False
    reason: str = ""
    """Why it replaces (ForceNew and the provider file, replaceOnChanges, a replaced dependency,
    a one-way change), why it may ("behaviour not known") or why AWS refuses it; empty for a plain
    in-place update."""
    may_replace: bool = False
    refused: bool = False
    """An in-place update the provider or AWS refuses (`change_rules.json` oneWay): it cannot be applied."""

    @property
    def kind(self) -> str:
        """The `detailedDiff` kind `pulumi preview --json` uses."""
        kind = "add" if self.old is None else "delete" if self.new is None else "update"
        return f"{kind}-replace" if self.forces_replacement else kind


@dataclass
class ResourceChange:
    """What happens to one resource: create, update, replace, delete or same."""

    op: str
    urn: str
    type: str
    name: str
    old: AppliedResource | None
    new: AppliedResource | None
    changes: list[PropertyChange] = field(default_factory=list)
    ignored: list[PropertyChange] = field(default_factory=list)
    """Changes to properties the resource ignores (`ignoreChanges`): the engine leaves them alone."""
    old_inputs: dict[str, Any] | None = None
    new_inputs: dict[str, Any] | None = None
    """Each side's inputs with generated ids as references (`${name.id}`), as compared."""

    @property
    def replace_reasons(self) -> list[PropertyChange]:
        return [change for change in self.changes if change.forces_replacement]

    @property
    def may_replace(self) -> list[PropertyChange]:
        return [change for change in self.changes if change.may_replace]

    @property
    def refused(self) -> list[PropertyChange]:
        return [change for change in self.changes if change.refused]


@dataclass
class PlanDiff:
    """The base plan, the changed plan, and what it takes to go from one to the other."""

    base: Plan
    current: Plan
    changes: list[ResourceChange]
    findings: list[PlanFinding] = field(default_factory=list)
    base_label: str = "base"
    current_label: str = "working tree"

    def of(self, op: str) -> list[ResourceChange]:
        return [change for change in self.changes if change.op == op]

    def named(self, name: str) -> ResourceChange:
        found = [change for change in self.changes if change.name == name]
        if len(found) != 1:
            raise KeyError(f"{len(found)} changes name {name!r}")
        return found[0]

    @property
    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for change in self.changes:
            counts[change.op] = counts.get(change.op, 0) + 1
        return counts

    @property
    def failed(self) -> bool:
        return self.current.failed or any(finding.severity == "failure" for finding in self.findings)

    @property
    def monthly_cost(self) -> dict[str, dict[str, float]] | None:
        """Both sides' monthly estimate per scenario (min, desired, max) and the difference."""
        if self.current.cost_estimate is None or (self.base.cost_estimate is None and self.base.resources):
            return None
        after = self.current.cost_estimate.monthly.model_dump()
        before = self.base.cost_estimate.monthly.model_dump() if self.base.cost_estimate else dict.fromkeys(after, 0.0)
        return {"base": before, "current": after,
                "difference": {scenario: after[scenario] - before[scenario] for scenario in after}}


def leaf_changes(old: Any, new: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Each changed leaf between two input trees; a block set on one side only is one change."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            yield from leaf_changes(old.get(key), new.get(key), f"{path}.{key}" if path else str(key))
    elif isinstance(old, list) and isinstance(new, list) and old and new:
        for index in range(max(len(old), len(new))):
            yield from leaf_changes(old[index] if index < len(old) else None,
                                    new[index] if index < len(new) else None, f"{path}[{index}]")
    elif old != new and not (_empty(old) and _empty(new)):
        yield path, old, new


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == {}
