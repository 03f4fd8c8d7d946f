"""The docs site as a reader sees it: the built HTML, not the Markdown. A strict build passes while
`<stack>` vanishes as an unknown tag or `__main__.py` turns into a bold "main", so these tests read
the pages mkdocs writes (the whole site builds in about a second)."""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from support import ROOT

HTML_ELEMENTS = frozenset(
    "a abbr article aside b blockquote br button caption code col colgroup dd del details div dl dt em "
    "figcaption figure footer h1 h2 h3 h4 h5 h6 header hr i img input kbd label li mark nav ol p pre "
    "section small span strong sub summary sup svg path table tbody td tfoot th thead tr u ul wbr".split()
)
"""The elements Python-Markdown, its extensions and Material write inside a page's article."""


class Article(HTMLParser):
    """The text, elements and paragraphs of a page's `<article>` (Material's page body)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.elements: set[str] = set()
        self.chunks: list[str] = []
        self.paragraphs: list[str] = []
        self._paragraph: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.depth += 1
        elif self.depth:
            self.elements.add(tag)
            if tag == "p":
                self._paragraph = []

    def handle_endtag(self, tag):
        if tag == "article":
            self.depth -= 1
        elif tag == "p" and self._paragraph is not None:
            self.paragraphs.append(" ".join("".join(self._paragraph).split()))
            self._paragraph = None

    def handle_data(self, data):
        if self.depth:
            self.chunks.append(data)
            if self._paragraph is not None:
                self._paragraph.append(data)

    @property
    def text(self) -> str:
        return " ".join("".join(self.chunks).split())


def read_article(page: Path) -> Article:
    article = Article()
    article.feed(page.read_text(encoding="utf-8"))
    return article


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """`mkdocs build --strict` of the repository's mkdocs.yml, as CI builds it: the one build of the
    real site in the tests (a strict build fails on a warning: a broken link or anchor, a page left
    out of the nav)."""
    site = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr
    return site


def test_the_site_builds_in_strict_mode(site):
    assert (site / "reference" / "stack-config" / "index.html").is_file()
    assert (site / "guides" / "new-project" / "index.html").is_file()


def load_generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator():
    return load_generator()


def shown(text: str) -> str:
    """What a reader sees of help text or a docstring: one line, code spans without their backticks."""
    return re.sub(r"(`+)(.+?)\1", r"\2", " ".join(text.split()))


def parser_texts(generator, parser: argparse.ArgumentParser):
    """Every description, epilog and argument help of the command line, as the reference takes them."""
    for text in (parser.description, parser.epilog):
        if text:
            yield text
    for action in parser._actions:
        if action.help and action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction):
            yield action.help % {**vars(action), "prog": parser.prog} if "%(" in action.help else action.help
    for _, summary, subparser in generator._subcommands(parser):
        yield summary
        yield from parser_texts(generator, subparser)


def test_the_commands_page_shows_every_help_text_as_the_parser_has_it(site, generator):
    from gpucloud.cli import build_parser

    page = read_article(site / "reference" / "commands" / "index.html").text
    texts = [text for _, summary, command in generator._subcommands(build_parser())
             for text in (summary, *parser_texts(generator, command))]
    missing = [text for text in texts if shown(text) not in page]
    assert missing == [], "the rendered commands page drops or changes these help texts"
    assert "stacks/Pulumi.<stack>.yaml" in page and "a __main__.py" in page and "<name base>.rules.yml" in page


def shown_descriptions(generator, schema: dict) -> list[str]:
    """The description of each key's row in the stack-config reference (its own, else its model's)."""
    definitions = schema["$defs"]
    found = []

    def walk(field):
        resolved, _ = generator._resolve(field, definitions)
        found.append(field.get("description") or resolved.get("description") or "")
        while resolved.get("type") == "array" and "items" in resolved:
            resolved, _ = generator._resolve(resolved["items"], definitions)
        for child in (resolved.get("properties") or {}).values():
            walk(child)

    for field in schema["properties"]["config"]["properties"].values():
        walk(field)
    return found


def test_the_stack_config_and_policy_pages_show_every_description_as_written(site, generator):
    from gpucloud.config.schema import stack_file_schema
    from gpucloud.policy import RULES

    config_page = read_article(site / "reference" / "stack-config" / "index.html").text
    descriptions = shown_descriptions(generator, stack_file_schema())
    assert len(descriptions) > 150
    assert [text for text in descriptions if shown(text) not in config_page] == []
    policy_page = read_article(site / "reference" / "policies" / "index.html").text
    assert [rule.name for rule in RULES if shown(rule.description) not in policy_page] == []


def test_no_page_holds_an_element_html_does_not_have(site):
    """A `<placeholder>` written outside code reaches the HTML as an element, and the browser shows nothing."""
    unknown = {
        page.relative_to(site).as_posix(): sorted(read_article(page).elements - HTML_ELEMENTS)
        for page in site.rglob("index.html")
    }
    assert {page: elements for page, elements in unknown.items() if elements} == {}


def config_key_cells(page: Path) -> list[tuple[str, list[str]]]:
    """Each stack-config key cell: its class and the text of each of its unbreakable steps."""
    html = page.read_text(encoding="utf-8")
    cells = []
    for code in re.findall(r"<tr>\s*<td>(<code[^>]*>.*?</code>)</td>", html, flags=re.S):
        css_class = re.match(r'<code(?: class="([^"]*)")?>', code).group(1) or ""
        cells.append((css_class, re.findall(r"<span>(.*?)</span>", code)))
    return cells


def test_stack_config_keys_wrap_only_between_their_steps(site):
    """Material breaks code anywhere (`word-break: break-word`); the key column keeps each step of a
    key whole, so `maxReplacementsPerHour` never splits across lines."""
    cells = config_key_cells(site / "reference" / "stack-config" / "index.html")
    assert len(cells) > 150
    assert {css_class for css_class, _ in cells} == {"config-key"}
    deep = ["gpu-cloud:groups[].", "health.", "maxReplacementsPerHour"]
    assert deep in [steps for _, steps in cells]
    assert all(step.endswith(".") for _, steps in cells for step in steps[:-1])
    assert all("." not in step[:-1] for _, steps in cells for step in steps)
    css = " ".join((site / "stylesheets" / "reference.css").read_text().split())
    assert ".md-typeset code.config-key { word-break: normal; overflow-wrap: normal; }" in css
    assert ".md-typeset code.config-key span { white-space: nowrap; }" in css
    page = (site / "reference" / "stack-config" / "index.html").read_text()
    assert 'href="../../stylesheets/reference.css"' in page


def shingles(paragraph: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", paragraph.lower())
    return {tuple(words[index:index + 3]) for index in range(len(words) - 2)}


def repeated_paragraphs(paragraphs: list[str]) -> list[tuple[str, str]]:
    """Pairs of paragraphs of twenty words or more that say the same thing: two fifths of the shorter
    one's three-word runs are in the other (two wordings of one fact, left after an edit). Measured
    on the site of 2026-11-28: the two repeats removed then shared 0.47 and 0.51, the closest pair
    of different paragraphs 0.33."""
    long = [(paragraph, shingles(paragraph)) for paragraph in paragraphs if len(paragraph.split()) >= 20]
    return [
        (first[:60], second[:60])
        for (first, first_runs), (second, second_runs) in itertools.combinations(long, 2)
        if len(first_runs & second_runs) >= 0.4 * min(len(first_runs), len(second_runs))
    ]


def test_no_page_says_the_same_thing_twice(site):
    repeated = {
        page.relative_to(site).as_posix(): repeated_paragraphs(read_article(page).paragraphs)
        for page in site.rglob("index.html")
    }
    assert {page: pairs for page, pairs in repeated.items() if pairs} == {}


def test_the_repeat_finder_sees_a_reworded_paragraph():
    """The cost guide's two wordings of unpriced GPU compute, and a neighbour that says something else."""
    first = ("GPU compute is the exception: when a group's instance type has no price in the stack's region (a "
             "region the catalog does not cover, say), the plan prints Cost: GPU compute is not priced … under the "
             "policy summary and fails with the budget finding unpriced-compute. A stack that plans there knowingly "
             "sets gpu-cloud:budget: {monthlyUsd: …, acceptUnpricedCompute: true}; the finding becomes the warning "
             "unpriced-compute-accepted and the budget is checked on the priced part.")
    second = ("Unpriced GPU compute is different, since it leaves most of the cost out: a group whose instance type "
              "has no price in the stack's region (a region the catalog does not cover, say) prints Cost: GPU compute "
              "is not priced under the policy summary and fails the plan with an unpriced-compute finding. A stack "
              "that knowingly plans there says so, and the finding becomes the warning unpriced-compute-accepted, "
              "with the budget checked on the priced part:")
    other = ("Spot discounts come from AWS's Spot Instance Advisor savings (a committed copy of the public feed), the "
             "lowest saving among each family's types; where the feed has none, spot is priced at on-demand and the "
             "plan says so.")
    assert repeated_paragraphs([first, other, second]) == [(first[:60], second[:60])]
    assert repeated_paragraphs([first, other]) == []


def test_the_guides_point_nowhere_the_site_does_not_say_it():
    """The site is what readers have; "see the README" sent them to a file that did not say it."""
    pages = [*sorted((ROOT / "docs").rglob("*.md"))]
    pointing = [page.relative_to(ROOT).as_posix() for page in pages
                if re.search(r"\bsee the README\b", page.read_text(encoding="utf-8"), flags=re.I)]
    assert pointing == []


def test_every_exit_code_list_says_what_0_means(generator):
    """`logs`, `stop` and `jobs` listed only their failures; a script author needs the success too."""
    from gpucloud.cli import build_parser

    epilogs = {}

    def walk(prog, parser):
        if parser.epilog and parser.epilog.startswith("exit codes:"):
            epilogs[prog] = parser.epilog
        for name, _, subparser in generator._subcommands(parser):
            walk(f"{prog} {name}", subparser)

    walk("gpucloud", build_parser())
    assert {"gpucloud logs", "gpucloud stop", "gpucloud jobs", "gpucloud plan"} <= set(epilogs)
    without_success = [prog for prog, epilog in epilogs.items()
                       if not epilog.startswith("exit codes: 0 ") and "the session's" not in epilog]
    assert without_success == []
