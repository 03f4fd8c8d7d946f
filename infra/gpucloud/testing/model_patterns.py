"""AWS's input patterns, as botocore's service models carry them, compiled for Python's `re`.

The models' `pattern` traits are Java regular expressions (the services that enforce them run
on the JVM): `\\p{L}` categories, POSIX classes such as `\\p{Alnum}`, UTF-16 surrogate pairs for
characters past U+FFFF, `(?i)` in the middle of a pattern, `-` right after `\\w` inside a class.
Python's `re` refuses some of these and reads others differently, so each pattern is translated
to what Java means (java.util.regex.Pattern's documentation, read 2026-11-25):

- `\\w \\d \\s` and `(?i)` are ASCII-only in Java by default: patterns compile with `re.ASCII`;
- POSIX classes (`\\p{Alnum}`, `\\p{Punct}`, ...) are US-ASCII only;
- `.` does not match any line terminator (`\\n \\r \\u0085 \\u2028 \\u2029`), not only `\\n`;
- a `-` after a class escape inside `[...]` is a literal dash;
- an inline flag group in the middle of a pattern applies to the end of its enclosing group.

Unicode categories (`\\p{L}`, `\\p{Zs}`) become explicit code point ranges. Listing all of them
means reading the category of every code point once (a fifth of a second), so a pattern is
compiled twice, lazily: against ASCII-only values the categories are cut to ASCII, which is
exact for such values, and the full tables are built only when a value holds other characters.

AWS matches the whole value (`Value 'this is the ???' at 'description' failed to satisfy
constraint: Member must satisfy regular expression pattern: [\\u0009...\\u00FF]*` for an IAM role
description, a pattern that a search would satisfy with an empty match: zenn.dev/kenpi/articles/
d6d64d547e5146, read 2026-11-25), so a compiled pattern is used with `fullmatch`. A pattern that
uses what is not translated here (nested classes, `&&`, `\\h`, `\\p{IsAlphabetic}`) raises
UntranslatablePattern: the caller records it as not checked instead of guessing.
"""

from __future__ import annotations

import functools
import re
import string
import sys
import unicodedata
import warnings

ASCII_LIMIT = 0x80
UNICODE_LIMIT = sys.maxunicode + 1


class UntranslatablePattern(ValueError):
    """A Java pattern this module does not translate exactly."""


_PUNCT = "".join(re.escape(char) for char in string.punctuation)
POSIX_CLASSES = {
    "Lower": "a-z", "Upper": "A-Z", "ASCII": "\\x00-\\x7f", "Alpha": "a-zA-Z", "Digit": "0-9",
    "Alnum": "a-zA-Z0-9", "Punct": _PUNCT, "Graph": "a-zA-Z0-9" + _PUNCT, "Print": "a-zA-Z0-9 " + _PUNCT,
    "Blank": " \\t", "Cntrl": "\\x00-\\x1f\\x7f", "XDigit": "0-9a-fA-F", "Space": " \\t\\n\\x0b\\f\\r",
}
"""java.util.regex.Pattern's POSIX character classes (US-ASCII only)."""

GENERAL_CATEGORIES = frozenset(
    "Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl Zp Cc Cf Cs Co Cn".split()
)
"""Unicode's general categories; `\\p{L}` names all those starting with L."""
_LINE_TERMINATORS = "\\n\\r\\x85\\u2028\\u2029"
_UNCHANGED_ESCAPES = set("wWdDsSbBAtnrfa") | set("123456789")
_FLAGS = re.compile(r"\(\?([imsx]+)\)")


@functools.cache
def _category_table(limit: int) -> dict[str, tuple[tuple[int, int], ...]]:
    """Two-letter Unicode general category -> its code point ranges below `limit`."""
    ranges: dict[str, list[list[int]]] = {}
    category = unicodedata.category
    for point in range(limit):
        spans = ranges.setdefault(category(chr(point)), [])
        if spans and spans[-1][1] == point - 1:
            spans[-1][1] = point
        else:
            spans.append([point, point])
    return {name: tuple((low, high) for low, high in spans) for name, spans in ranges.items()}


def _point(code: int) -> str:
    return f"\\U{code:08x}"


def _category_set(name: str, negated: bool, limit: int) -> str:
    """`\\p{name}` (`\\P{name}` when negated) as the inside of a character class."""
    if name in POSIX_CLASSES:
        inside = POSIX_CLASSES[name]
        if not negated:
            return inside
        members = [code for code in range(ASCII_LIMIT) if re.fullmatch(f"[{inside}]", chr(code))]
        return "".join(_span(low, high) for low, high in _complement(_spans(members), limit))
    if name not in GENERAL_CATEGORIES and name not in {key[0] for key in GENERAL_CATEGORIES}:
        raise UntranslatablePattern(f"\\p{{{name}}}")
    table = _category_table(limit)
    names = [key for key in table if key == name or (len(name) == 1 and key.startswith(name))]
    points = sorted(span for key in names for span in table[key])
    if negated:
        points = _complement(points, limit)
    # An empty set: a character no value below the limit holds keeps the class valid and exact.
    return "".join(_span(low, high) for low, high in points) or _point(sys.maxunicode)


def _spans(codes: list[int]) -> list[tuple[int, int]]:
    spans: list[list[int]] = []
    for code in codes:
        if spans and spans[-1][1] == code - 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return [(low, high) for low, high in spans]


def _complement(spans: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    result, start = [], 0
    for low, high in spans:
        if low > start:
            result.append((start, low - 1))
        start = max(start, high + 1)
    if start < limit:
        result.append((start, limit - 1))
    return result


def _span(low: int, high: int) -> str:
    return _point(low) if low == high else f"{_point(low)}-{_point(high)}"


def translate(pattern: str, limit: int = UNICODE_LIMIT) -> str:
    """The Python `re` pattern (for `re.ASCII`) that means what Java's `pattern` means, for values
    whose characters are all below `limit`. Raises UntranslatablePattern."""
    return _Translator(pattern, limit).run()


class _Translator:
    def __init__(self, pattern: str, limit: int):
        self.pattern, self.limit, self.position = pattern, limit, 0
        self.out: list[str] = []
        self.in_class = False
        self.groups: list[list[str]] = [[]]
        """Per open group, the inline flags opened inside it (each one an extra `(?f:` to close)."""
        self.dotall = False

    def run(self) -> str:
        leading = _FLAGS.match(self.pattern)
        if leading:
            self.out.append(leading.group(0))
            self.dotall = "s" in leading.group(1)
            self.position = leading.end()
        while self.position < len(self.pattern):
            self.step()
        if self.in_class:
            raise UntranslatablePattern("unterminated character class")
        self.out.append(")" * len(self.groups[0]))
        return "".join(self.out)

    def step(self) -> None:
        char = self.pattern[self.position]
        if char == "\\":
            self.escape()
            return
        self.position += 1
        if self.in_class:
            self.class_char(char)
        elif char == "[":
            self.in_class = True
            self.out.append("[")
            if self.pattern.startswith("^", self.position):
                self.out.append("^")
                self.position += 1
        elif char == "(":
            self.open_group()
        elif char == ")":
            if len(self.groups) == 1:
                raise UntranslatablePattern("unbalanced parenthesis")
            self.out.append(")" * len(self.groups.pop()) + ")")
        elif char == "|":
            flags = self.groups[-1]
            self.out.append(")" * len(flags) + "|" + "".join(f"(?{flag}:" for flag in flags))
        elif char == ".":
            self.out.append("." if self.dotall else f"[^{_LINE_TERMINATORS}]")
        else:
            self.out.append(char)

    def class_char(self, char: str) -> None:
        if char == "]":
            self.in_class = False
        elif char == "[" or (char == "&" and self.pattern.startswith("&", self.position)):
            raise UntranslatablePattern("nested class or class intersection")
        self.out.append(char)

    def open_group(self) -> None:
        flags = _FLAGS.match(self.pattern, self.position - 1)
        if flags:
            if "s" in flags.group(1):
                raise UntranslatablePattern("(?s) after the start")
            self.out.append(f"(?{flags.group(1)}:")
            self.groups[-1].append(flags.group(1))
            self.position = flags.end()
            return
        if self.pattern.startswith("?<", self.position) and self.pattern[self.position + 2:self.position + 3] not in ("=", "!"):
            self.out.append("(?P<")
            self.position += 2
        elif self.pattern.startswith("?", self.position) and not re.match(r"\?(?:[:=!<>]|-?[imx]+:)", self.pattern[self.position:]):
            raise UntranslatablePattern("inline flags Python does not share")
        else:
            self.out.append("(")
        self.groups.append([])

    def escape(self) -> None:
        pattern, start = self.pattern, self.position
        if start + 1 >= len(pattern):
            raise UntranslatablePattern("trailing backslash")
        letter = pattern[start + 1]
        self.position = start + 2
        if letter in "pP":
            named = re.match(r"\{(\w+)\}|([A-Z])", pattern[self.position:])
            if not named:
                raise UntranslatablePattern("\\p without a name")
            self.position += named.end()
            inside = _category_set(named.group(1) or named.group(2), letter == "P", self.limit)
            self.out.append(inside if self.in_class else f"[{inside}]")
            self.literal_dash_after_class()
        elif letter == "u":
            self.out.append(self.unicode_escape(start))
        elif letter == "Q":
            end = pattern.find("\\E", self.position)
            end = len(pattern) if end < 0 else end
            self.out.append(re.escape(pattern[self.position:end]))
            self.position = min(len(pattern), end + 2)
        elif letter == "z" and not self.in_class:
            self.out.append("\\Z")
        elif letter == "Z" and not self.in_class:
            self.out.append("(?=\\n?\\Z)")
        elif letter == "x":
            hexadecimal = re.match(r"[0-9a-fA-F]{2}|\{([0-9a-fA-F]+)\}", pattern[self.position:])
            if not hexadecimal:
                raise UntranslatablePattern("\\x without two hex digits")
            self.position += hexadecimal.end()
            self.out.append(_point(int(hexadecimal.group(1) or hexadecimal.group(0), 16)))
        elif letter == "e":
            self.out.append("\\x1b")
        elif letter in _UNCHANGED_ESCAPES:
            self.out.append("\\" + letter)
            if letter in "wWdDsS":
                self.literal_dash_after_class()
        elif not letter.isalnum():
            self.out.append("\\" + letter)
        else:
            raise UntranslatablePattern(f"\\{letter}")

    def unicode_escape(self, start: int) -> str:
        """`\\uXXXX`, with a UTF-16 surrogate pair `\\uD800\\uDC00` read as the one character it encodes."""
        unit = self.pattern[start + 2:start + 6]
        if not re.fullmatch(r"[0-9a-fA-F]{4}", unit):
            raise UntranslatablePattern("\\u without four hex digits")
        code = int(unit, 16)
        self.position = start + 6
        low = re.match(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})", self.pattern[self.position:])
        if 0xD800 <= code <= 0xDBFF and low:
            self.position += low.end()
            code = 0x10000 + ((code - 0xD800) << 10) + (int(low.group(1), 16) - 0xDC00)
        return _point(code)

    def literal_dash_after_class(self) -> None:
        """Java reads `[\\w-.]` as word characters, a dash and a dot; Python refuses the range."""
        if self.in_class and self.pattern.startswith("-", self.position) and not self.pattern.startswith("-]", self.position):
            self.out.append("\\-")
            self.position += 1


@functools.cache
def compiled(pattern: str, limit: int) -> re.Pattern[str]:
    """The translated pattern, compiled once per process. Raises UntranslatablePattern."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(translate(pattern, limit), re.ASCII)
        except re.error as error:
            raise UntranslatablePattern(str(error)) from error


def matches(pattern: str, value: str) -> bool:
    """Whether AWS takes `value` for a member whose model pattern is `pattern`. Raises UntranslatablePattern."""
    limit = ASCII_LIMIT if value.isascii() else UNICODE_LIMIT
    return compiled(pattern, limit).fullmatch(value) is not None
