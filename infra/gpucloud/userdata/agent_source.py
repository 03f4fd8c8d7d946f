"""The node agent (`gpucloud.node`) as user data carries it: its modules' source without
docstrings, comments, annotations or optional spaces, and scripts without comment lines."""

from __future__ import annotations

import ast
import bisect
import functools
import io
import tokenize
from collections.abc import Iterator
from importlib import resources

AGENT_PACKAGE_INIT = '"""gpu-cloud node agent, written from user data."""\n'

WATCH_MODULES = frozenset({"exporter.py", "faults.py", "kernel_log.py", "replace.py", "watch.py"})
"""Node modules of the watch service, which user data has no room for (EC2's 16 KB): they ship
with the agent bundle from S3 that replaces the user-data copy."""


def agent_sources() -> dict[str, str]:
    """The node agent's modules by path under the agent lib dir, trimmed by shippable_source."""
    return dict(_agent_sources())


@functools.lru_cache(maxsize=1)
def _agent_sources() -> tuple[tuple[str, str], ...]:
    sources = [("gpucloud/__init__.py", AGENT_PACKAGE_INIT)]
    package = resources.files("gpucloud.node")
    for entry in sorted(package.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".py") and entry.name not in WATCH_MODULES:
            sources.append(
                (f"gpucloud/node/{entry.name}", shippable_source(entry.read_text(encoding="utf-8")))
            )
    return tuple(sources)


def shippable_source(source: str) -> str:
    """Python source as the node gets it: each statement on one line, at the line where it
    starts in the repository (so tracebacks on the node name repository line numbers), without
    docstrings, comments, function annotations or the spaces Python does not need, indented one
    space a level. The agent never evaluates its function annotations (`from __future__ import
    annotations`); dataclass field annotations stay. Built from tokens, with f-strings copied as
    written, so that every Python the package supports ships the same bytes."""
    spans, placeholders = _docstring_and_annotation_spans(source)
    dropped = sorted(spans)
    dropped_starts = [low for low, _ in dropped]
    lines = source.splitlines(keepends=True)
    rows: list[str | None] = [""] * len(lines)
    depth, parts, start, previous = 0, [""], (0, 0), (0, "")
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for token in tokens:
        kind, text = token.type, token.string
        if kind == tokenize.INDENT:
            depth += 1
        elif kind == tokenize.DEDENT:
            depth -= 1
        elif kind == tokenize.NEWLINE:
            statement = "".join(parts)
            if statement:
                rows[start[0] - 1] = " " * start[1] + statement
                folded = statement.count("\n")
                rows[start[0] : start[0] + folded] = [None] * folded
            parts, previous = [""], (0, "")
        elif kind in _LAYOUT_TOKENS or text == "->" or _inside(token.start, token.end, dropped, dropped_starts):
            if token.start in placeholders:
                parts, start = ['""'], (token.start[0], depth)
        else:
            if kind == _FSTRING_START:
                end = _fstring_end(tokens)
                text = _source_between(lines, token.start, end)
            if not parts[-1]:
                start = (token.start[0], depth)
            elif (previous[1][-1:].isalnum() or previous[1].endswith("_")) and (text[0].isalnum() or text[0] == "_"):
                parts.append(" ")
            elif previous[0] == tokenize.NUMBER and text.startswith("."):
                parts.append(" ")
            parts.append(text)
            previous = (kind, text)
    return "".join(row + "\n" for row in rows if row is not None).rstrip("\n") + "\n"


_LAYOUT_TOKENS = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER})
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
"""From Python 3.12 tokenize splits f-strings into parts; they are copied whole, as written."""


def _fstring_end(tokens: Iterator[tokenize.TokenInfo]) -> tuple[int, int]:
    nested = 1
    for token in tokens:
        if token.type == _FSTRING_START:
            nested += 1
        elif token.type == tokenize.FSTRING_END:
            nested -= 1
            if not nested:
                return token.end
    raise SyntaxError("unterminated f-string")


def _source_between(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] : end[1]]
    return lines[start[0] - 1][start[1] :] + "".join(lines[start[0] : end[0] - 1]) + lines[end[0] - 1][: end[1]]


Position = tuple[int, int]


def _inside(start: Position, end: Position, spans: list[tuple[Position, Position]], starts: list[Position]) -> bool:
    """Whether a token lies within one of the sorted, disjoint spans (the last one starting at or
    before it is the only candidate): a scan of every span per token took a third of a second."""
    index = bisect.bisect_right(starts, start) - 1
    return index >= 0 and end <= spans[index][1]


def _docstring_and_annotation_spans(source: str) -> tuple[list[tuple[Position, Position]], set[Position]]:
    """Where docstrings (any bare string statement) and parameter annotations are, and which
    docstrings are a body's only statement, to be kept as "" so the body stays valid."""
    spans: list[tuple[Position, Position]] = []
    placeholders: set[Position] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else ():
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                if isinstance(statement.value.value, str) and statement.end_lineno is not None:
                    spans.append(((statement.lineno, statement.col_offset), (statement.end_lineno, statement.end_col_offset or 0)))
                    if len(body) == 1:
                        placeholders.add((statement.lineno, statement.col_offset))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
                annotation = argument.annotation if argument is not None else None
                if annotation is not None and annotation.end_lineno is not None:
                    spans.append(((argument.lineno, argument.col_offset + len(argument.arg)), (annotation.end_lineno, annotation.end_col_offset or 0)))
            if node.returns is not None and node.returns.end_lineno is not None:
                spans.append(((node.returns.lineno, node.returns.col_offset), (node.returns.end_lineno, node.returns.end_col_offset or 0)))
    return spans, placeholders


def shippable_shell(script: str) -> str:
    """A script without its comment lines (the shebang and shellcheck directives stay) and blank
    lines: they explain the script here, in the repository, and cost user data bytes on the node."""
    return "".join(
        line
        for line in script.splitlines(keepends=True)
        if line.strip() and (not line.lstrip().startswith("#") or line.startswith("#!") or "shellcheck " in line)
    )
