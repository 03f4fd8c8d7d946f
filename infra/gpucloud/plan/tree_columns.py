"""How wide each column of the plan's resource tree is at a given terminal width.

The marker (`+`) and the operation (`create`) always keep their full width, and the Info column
keeps at least a readable share: at narrow widths the type tokens are shortened
(`aws:s3/bucketPolicy:BucketPolicy` reads `aws:s3:BucketPolicy`) and then the Type and Name
columns are cut with an ellipsis, rather than letting the table drop or clip the columns a
reviewer needs.
"""

from __future__ import annotations

from dataclasses import dataclass

MARKER_WIDTH = 1
OPERATION_WIDTH = len("create")
COLUMN_GAPS = 2 * 4
"""Five columns without edge padding: one space either side of each of the four inner borders."""
INFO_SHARE = 0.35
"""Below the width where everything fits, Info gets this share of what the tree columns leave."""
INFO_MIN_WIDTH = 28
TYPE_SHARE = 0.6
"""Of what Type and Name share when both must be cut, Type's part (it carries the tree's indent)."""
ELLIPSIS = "…"


@dataclass(frozen=True)
class TreeLayout:
    type_width: int
    name_width: int
    info_width: int
    short_types: bool

    def type_cell(self, prefix: str, token: str) -> str:
        return cut_end(prefix + (short_type(token) if self.short_types else token), self.type_width)

    def name_cell(self, name: str) -> str:
        return cut_middle(name, self.name_width)


def short_type(token: str) -> str:
    """`aws:s3/bucketPolicy:BucketPolicy` as `aws:s3:BucketPolicy`: the module's file part repeats
    the resource's name and is dropped; other tokens (`gpu-cloud:index:X`) stay as they are."""
    package, _, rest = token.partition(":")
    module, _, name = rest.partition(":")
    if "/" not in module or not name:
        return token
    return f"{package}:{module.split('/', 1)[0]}:{name}"


def cut_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def cut_middle(text: str, width: int) -> str:
    """Keep both ends of a name: siblings share their start (the component's name) and differ at the end."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (width - 1 - head):]


def tree_layout(width: int, rows: list[tuple[str, str, str]]) -> TreeLayout:
    """The column widths for rows of (tree prefix, type token, name) at a terminal `width`."""
    room = max(width - COLUMN_GAPS - MARKER_WIDTH - OPERATION_WIDTH, 3 * INFO_MIN_WIDTH)
    name_needed = max((len(name) for _prefix, _token, name in rows), default=4)
    full_needed = max((len(prefix + token) for prefix, token, _name in rows), default=4)
    info_min = max(INFO_MIN_WIDTH, int(room * INFO_SHARE))
    if full_needed + name_needed + info_min <= room:
        return TreeLayout(full_needed, name_needed, room - full_needed - name_needed, short_types=False)
    short_needed = max((len(prefix + short_type(token)) for prefix, token, _name in rows), default=4)
    shared = room - info_min
    if short_needed + name_needed <= shared:
        return TreeLayout(short_needed, name_needed, room - short_needed - name_needed, short_types=True)
    type_width = min(short_needed, max(int(shared * TYPE_SHARE), shared - name_needed))
    name_width = min(name_needed, shared - type_width)
    return TreeLayout(type_width, name_width, room - type_width - name_width, short_types=True)
