"""The plan asks for the region's offerings (every offering by zone, a large invoke) only when a
capacity fix reads them, and then once; `test_capacity_facts_match` holds the fixes to them."""

from __future__ import annotations

from gpucloud.plan.preview import OfferedWhenRead


class CountingLookups:
    def __init__(self) -> None:
        self.asked = 0

    def offered_gpu_types(self) -> tuple[str, ...]:
        self.asked += 1
        return ("g6e.4xlarge", "p5.48xlarge")


def test_the_offerings_are_asked_on_the_first_read_and_only_then():
    lookups = CountingLookups()
    offered = OfferedWhenRead(lookups)  # type: ignore[arg-type]
    assert lookups.asked == 0, "made, not read: no invoke"
    assert "p5.48xlarge" in offered and "p5e.48xlarge" not in offered
    assert "g6e.4xlarge" in offered
    assert lookups.asked == 1
