"""Build the course pack as a static HTML site, in one of two editions.

    reader   (make site, into site/): for self-learners. Every notebook of
             notebooks/ with its outputs and figures; each task's solution
             folded under a closed "Show the solution" disclosure; each hidden
             test cell shown as one line saying what it checks, never its
             code; no answer of the graded quiz anywhere.
    student  (make site STUDENT=1, into dist/student-site/): for the students
             of a graded course. The tasks as release/lab hands them out
             (blank), with no solution, no hidden test, no check cell and
             no quiz key; an
             output is dropped wherever a student's own notebook would show
             it only once the task is solved (the solution cell itself, and
             every cell that calls something a solution defines).

Both editions hold the guide (reading guide, glossary, references), the data's
README and an index in lecture order. The self-check page, outside the
lectures' numbering, is the practice quiz (notebooks/quiz_practice.ipynb),
whose key is meant to be read: each question is followed by its answer,
folded, with the reason for every option (from ragkit.quiz_practice). No page
comes from the graded quiz. Without that notebook there is no self-check page;
`selfcheck_source` is the one place that decides.

What the reader does not need to see is folded, never deleted: the setup
cell's test helpers (its functions that only test cells use) and the check
cells (`nbNN_check_*`, locked, ungraded) that assert the numbers the prose
states. Figures are PNG or SVG files next to the pages, each with an alt text
made of its title (the "Figure N: ..." string its cell draws) and its caption
(the paragraph of the prose around it that describes it). A `[n]` citation
links to the page's own reference list, or to the guide's. Long pages open
with a table of contents, and the glossary with an A-Z line.

Nothing is fetched to read the site: one shared stylesheet (assets/site.css,
its code colours from the `CodeColours` Pygments style below), and MathJax
3 (TeX in, CommonHTML out) copied from the django-static-mathjax package into
assets/mathjax/ and loaded only by pages with formulas. The output is
byte-reproducible: no time, path or host goes into it, and files are written
in a fixed order.

    site/index.html                   the index (dist/student-site/ alike)
    site/notebooks/NN_name.html       from notebooks/NN_name.ipynb
    site/notebooks/img/NN_name-N.png  its figures, in order
    site/guide/README.html            from guide/README.md (glossary, references)
    site/data/README.html             from data/README.md
    site/assets/                      site.css, mathjax-config.js, mathjax/
    site/site.json                    the manifest the tests read

A relative link to a page the site does not have becomes plain text and is
listed in site.json. The site is generated, never committed.

usage: python tools/build_site.py [--student] [--out DIR]
"""
from __future__ import annotations

import argparse
import ast
import base64
import html
import importlib.util
import json
import posixpath
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import mistune
import nbformat
from bs4 import BeautifulSoup, NavigableString
from nbconvert import HTMLExporter, TemplateExporter
from nbconvert.filters import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from pygments.formatters import HtmlFormatter
from pygments.style import Style
from pygments.token import (Comment, Error, Generic, Keyword, Name, Number,
                            Operator, String)

ROOT = Path(__file__).resolve().parents[1]
from autograder.run.rag_feedback import (  # noqa: E402  (how grading splits a notebook)
    BEGIN as HIDDEN, docstring, parts_of)
from autograder.run.nbgrader_cli import is_check_cell as is_check  # noqa: E402

HERE = ROOT / "tools" / "site"
TEMPLATES = HERE / "templates"
MANIFEST = "site.json"  # also marks a folder as one this script may replace
EDITIONS = ("reader", "student")
DEFAULT_OUT = {"reader": ROOT / "site", "student": ROOT / "dist" / "student-site"}
SITE_NAME = "Building blocks: retrieval-augmented generation"
GUIDE_ORDER = ("README.md", "glossary.md", "references.md")
PRACTICE = "quiz_practice.ipynb"
SOLUTION = ("### BEGIN SOLUTION", "### END SOLUTION")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
CITATION = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$|\\\(.+?\\\)|\[(\d{1,2})\]", re.S)
MATH = re.compile(r"\$[^$]+\$|\\\(|\\\[")
PATHLIKE = re.compile(r"^[\w.-]+(/[\w.-]+)*\.(md|ipynb|html)(#[\w.-]*)?$")
# MathJax 3 from the django-static-mathjax package (its static files only;
# Django is not needed): TeX in, CommonHTML out, and what that loads on demand
MATHJAX_SCRIPT = "tex-chtml.js"
MATHJAX_PARTS = ("es5/tex-chtml.js", "es5/output/chtml/fonts/woff-v2",
                 "es5/input/tex/extensions", "LICENSE")
MATHJAX_SKIP = ("es5/input/tex/extensions/all-packages.js",)  # every extension at once

MATHJAX_CONFIG = """\
// read before assets/mathjax/tex-chtml.js, on every page with a formula
window.MathJax = {
  tex: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]],
        displayMath: [["$$", "$$"], ["\\\\[", "\\\\]"]],
        processEscapes: true, processEnvironments: true},
  options: {skipHtmlTags: ["script", "noscript", "style", "textarea", "pre",
                           "code", "annotation", "annotation-xml"]}
};
"""


class CodeColours(Style):
    """Code colours with at least 6:1 contrast on the code background
    (#f6f6f6), so that every token passes WCAG AA for small text."""

    background_color = "#f6f6f6"
    styles = {
        Comment: "italic #4d5358",
        Keyword: "bold #7a1f6b",
        Keyword.Constant: "bold #7a1f6b",
        Operator.Word: "bold #7a1f6b",
        Name.Builtin: "#0b4f8a",
        Name.Builtin.Pseudo: "#0b4f8a",
        Name.Function: "#1d4e1d",
        Name.Class: "bold #1d4e1d",
        Name.Decorator: "#5a3d00",
        Name.Exception: "bold #8b1a1a",
        Name.Namespace: "#0b4f8a",
        String: "#8b1a1a",
        String.Doc: "italic #6b2c00",
        String.Interpol: "bold #5a3d00",
        String.Escape: "bold #5a3d00",
        Number: "#0a5a5a",
        Generic.Error: "#8b1a1a",
        Generic.Traceback: "#8b1a1a",
        Error: "#8b1a1a",
    }


# ------------------------------------------------------------ small helpers

def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading (the guide's links rely on it)."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def first_heading(markdown: str, fallback: str) -> str:
    found = re.search(r"^# (.+)$", markdown, re.M)
    return found.group(1).strip() if found else fallback


def notebook_title(nb: nbformat.NotebookNode, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            return first_heading(cell.source, fallback)
    return fallback


def plain_markdown(text: str) -> str:
    """Markdown as the words a screen reader should say: no markup, no math
    delimiters, links reduced to their text."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<https?://[^>]+>", "", text)
    text = re.sub(r"^#+\s*", "", text, flags=re.M)
    text = re.sub(r"[*`$]|(?<!\w)_+|_+(?!\w)", "", text)
    return " ".join(text.split())


def relative(target: str, here: str) -> str:
    """The link from the page `here` to `target` (both site paths)."""
    return posixpath.relpath(target, posixpath.dirname(here) or ".")


def trusted_html(element) -> str:
    """nbconvert's clean_html for content of our own: left as it is."""
    return element.decode() if isinstance(element, bytes) else str(element)


def python_of(source: str) -> str:
    """A cell's source with IPython's magics and shell lines commented out,
    line for line, so that `ast` can read it."""
    return re.sub(r"^([ \t]*)([%!])", r"\1#\2", source, flags=re.M)


def site_meta(cell, **values) -> None:
    cell.metadata.setdefault("site", {}).update(values)


# ------------------------------------------------- which cells, and how shown

def grading(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def is_test(cell) -> bool:
    meta = grading(cell)
    return bool(meta.get("grade")) and not meta.get("solution")


def is_setup(cell) -> bool:
    return grading(cell).get("grade_id", "").endswith("_setup")


def hidden_note(cell) -> str:
    """The one line a hidden test cell shows: what its hidden tests check."""
    what = re.sub(r"^\(hidden\)\s*", "", docstring(cell.source))  # whole, on one line
    points = grading(cell).get("points")
    worth = f", {points:g} point{'s' if points != 1 else ''}" if points else ""
    return f"(hidden tests{worth}: {what.rstrip('.') or 'edge cases'}.)"


def part_names(nb) -> dict[int, str]:
    """The graded part ("Part A") of each cell under a part heading, by
    index, as the feedback and `make check` split a notebook."""
    return {i: part.name for part in parts_of(nb) for i in part.answers + part.tests}


def reader_sources(nb) -> list[str]:
    """The code a reader is meant to read: every code cell but the tests,
    the prose checks and the setup."""
    return [c.source for c in nb.cells if c.cell_type == "code" and not is_test(c)
            and not is_check(c) and not is_setup(c)]


def code_cell(source: str, outputs=(), count=None, **site) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, execution_count=count)
    cell.outputs = list(outputs)
    cell.metadata["site"] = site
    cell.pop("id", None)
    return cell


def html_cell(markup: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_raw_cell(markup)
    cell.metadata["site"] = {"html": True}
    cell.pop("id", None)
    return cell


def split_solution(cell, part: str) -> list:
    """A solution cell as pieces: the code around each solution region shown,
    each region folded under "Show the solution"; the outputs go last."""
    lines = cell.source.splitlines()
    pieces, shown, folded, inside = [], [], [], False
    for line in lines:
        if SOLUTION[0] in line:
            inside = True
            if shown:
                pieces.append(("shown", shown))
            shown = []
        elif SOLUTION[1] in line:
            inside = False
            pieces.append(("folded", folded))
            folded = []
        elif inside:
            folded.append(line)
        else:
            shown.append(line)
    if inside or not any(kind == "folded" for kind, _ in pieces):
        pieces, shown = [("folded", lines)], []  # no markers: the whole cell
    if shown and any(line.strip() for line in shown):
        pieces.append(("shown", shown))
    label = f"Show the solution ({part})" if part else "Show the solution"
    out = []
    for n, (kind, body) in enumerate(pieces):
        last = n == len(pieces) - 1
        kwargs = {"prompt": n == 0}
        if kind == "folded":
            kwargs.update(fold=label, kind="solution")
        out.append(code_cell("\n".join(body), cell.outputs if last else (),
                             cell.execution_count, **kwargs))
    return out


def test_helpers(setup: str, readers: list[str]) -> set[str]:
    """Functions defined in the setup cell that no reader-facing cell uses
    (only test and check cells do), directly or through another helper."""
    tree = ast.parse(python_of(setup))
    defined = {node.name: ast.get_source_segment(setup, node) or ""
               for node in tree.body if isinstance(node, ast.FunctionDef)}

    def used_in(name: str, text: str) -> bool:
        return re.search(rf"\b{re.escape(name)}\b", text) is not None

    visible = {name for name in defined if any(used_in(name, t) for t in readers)}
    changed = True
    while changed:  # a helper that a visible function calls stays visible
        changed = False
        for name in set(defined) - visible:
            if any(used_in(name, defined[v]) for v in visible):
                visible.add(name)
                changed = True
    return set(defined) - visible


def split_setup(cell, helpers: set[str]) -> list:
    """The setup cell shown without its test helpers, which follow it folded."""
    if not helpers:
        return [cell]
    tree = ast.parse(python_of(cell.source))
    lines = cell.source.splitlines()
    cut = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in helpers:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            cut.update(range(first - 1, node.end_lineno))
    shown = "\n".join(line for i, line in enumerate(lines) if i not in cut)
    shown = re.sub(r"\n{3,}", "\n\n\n", shown).strip("\n")
    folded = "\n\n\n".join(
        "\n".join(lines[i] for i in range(len(lines)) if i in cut and _in_node(node, i))
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in helpers)
    names = ", ".join(sorted(helpers, key=cell.source.index))
    return [code_cell(shown, cell.outputs, cell.execution_count, prompt=True),
            code_cell(folded, (), None, prompt=False, kind="helpers",
                      fold=f"Show the test helpers ({names})")]


def _in_node(node, index: int) -> bool:
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return first - 1 <= index < node.end_lineno


def names_defined(source: str) -> set[str]:
    """Top-level names a solution cell defines (functions, classes, values)."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return set()
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return found


def names_used(source: str) -> set[str]:
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return set(re.findall(r"\b\w+\b", source))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def check_summary(cell) -> str:
    first = cell.source.lstrip().splitlines()[0] if cell.source.strip() else ""
    said = first[1:].strip() if first.startswith("#") else ""
    return f"Show the check of the numbers above ({said})" if said else \
        "Show the check of the numbers above"


# --------------------------------------------------------------- figures

# a figure's label: "Figure 7.1" (notebook 7, its first figure)
FIGURE_LABEL = r"Figure \w+(?:\.\w+)*"


def figure_title(source: str) -> str:
    """The "Figure N: ..." string a cell draws as its title, if any."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = " ".join(node.value.split())
            if re.match(FIGURE_LABEL, text):
                return text
    return ""


def figure_caption(nb, index: int, title: str) -> str:
    """The paragraph that describes a figure: one that names it ("Figure
    5b") in the prose just before or just after its cell; else the reading
    that follows it (when the next markdown cell goes on without a new
    heading); else the last paragraph before it."""
    def paragraphs(cell) -> list[str]:
        # a fold's markup is not prose; the paragraphs inside it are
        source = re.sub(r"<summary>.*?</summary>|</?details>", "", cell.source)
        return [p for p in re.split(r"\n\s*\n", source)
                if p.strip() and not p.lstrip().startswith(("#", "---", "```"))]

    before = next((paragraphs(c) for c in reversed(nb.cells[:index])
                   if c.cell_type == "markdown" and paragraphs(c)), [])
    following = next((c for c in nb.cells[index + 1:] if c.cell_type == "markdown"), None)
    after = paragraphs(following) if following is not None else []
    label = re.match(FIGURE_LABEL, title)
    if label:
        names = re.compile(rf"\b{re.escape(label.group(0))}(?![\w.]*\w)")
        named = [p for p in before if names.search(p)][-1:] or \
            [p for p in after if names.search(p)][:1]
        if named:
            return plain_markdown(named[0])
    if after and not following.source.lstrip().startswith(("#", "---")):
        return plain_markdown(after[0])
    return plain_markdown(before[-1]) if before else ""


def extract_figures(nb, stem: str, folder: str, files: dict[str, bytes]) -> int:
    """Move every image output to a file of its own and give it an alt text.

    `files` collects {site path: bytes}; each output gets the file's name
    (relative to its page) in metadata.filenames, as nbconvert expects."""
    count = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        title = figure_title(cell.source)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            kind = next((k for k in ("image/svg+xml", "image/png") if k in data), None)
            if kind is None:
                continue
            count += 1
            ext = "svg" if kind == "image/svg+xml" else "png"
            name = f"img/{stem}-{count}.{ext}"
            raw = data[kind]
            blob = ("".join(raw).encode("utf-8") if ext == "svg"
                    else base64.b64decode("".join(raw)))
            files[posixpath.join(folder, name)] = blob
            caption = figure_caption(nb, index, title)
            alt = ". ".join(p.rstrip(".") for p in (title, caption) if p) + "."
            if alt == ".":
                alt = f"A figure of {stem} drawn by the code above."
            output.metadata = dict(output.get("metadata", {}))
            output.metadata["filenames"] = {kind: name}
            output.metadata["site_alt"] = alt
            for other in [k for k in data if k.startswith("image/") and k != kind]:
                del data[other]
    return count


# ----------------------------------------------------- the two editions' cells

@dataclass
class Page:
    """One page of the site: where it goes, its title and its HTML body."""
    path: str
    title: str
    body: str = ""
    short: str = ""
    math: bool = False
    kind: str = "page"  # lecture, selfcheck, guide, data, index
    extra: dict = field(default_factory=dict)


def reader_cells(nb) -> list:
    """The reader's edition of an executed master: solutions folded, hidden
    tests as one line, test helpers and check cells folded."""
    parts = part_names(nb)
    readers = reader_sources(nb)
    cells = []
    for index, cell in enumerate(nb.cells):
        meta = grading(cell)
        if cell.cell_type != "code":
            cells.append(cell)
        elif meta.get("solution"):
            cells += split_solution(cell, parts.get(index, ""))
        elif is_test(cell) and HIDDEN in cell.source:
            cells.append(code_cell("", (), None, note=hidden_note(cell)))
        elif is_check(cell):
            site_meta(cell, fold=check_summary(cell), kind="check", prompt=False)
            cells.append(cell)
        elif is_setup(cell):
            cells += split_setup(cell, test_helpers(cell.source, readers))
        else:
            cells.append(cell)
    return cells


def student_cells(nb, release) -> list:
    """The student's edition: release/lab's cells (blank tasks, no hidden
    test), with the executed notebook's outputs where they give nothing
    away. An output is dropped from every cell whose source the release
    changed and from every cell that uses a name a solution defines. The
    release has no check cell, so neither has this edition (`nb` is the
    reading edition without them: see `aligned`)."""
    secret_names = set()
    for cell in nb.cells:
        if grading(cell).get("solution") and cell.cell_type == "code":
            secret_names |= names_defined(cell.source)
    readers = reader_sources(nb)
    cells = []
    for cell, handed in zip(nb.cells, release.cells):
        if cell.cell_type != "code":
            cells.append(handed)
            continue
        if is_test(cell) and HIDDEN in cell.source:
            cells.append(code_cell("", (), None, note=hidden_note(handed)))
            continue
        keep = handed.source == cell.source and not (
            names_used(cell.source) & secret_names) and not grading(cell).get("solution")
        shown = code_cell(handed.source, cell.outputs if keep else (),
                          cell.execution_count if keep else None, prompt=keep)
        if is_setup(cell):
            cells += split_setup(shown, test_helpers(cell.source, readers))
        else:
            cells.append(shown)
    return cells


def aligned(nb, release, name: str) -> None:
    """release/lab and notebooks/ without its check cells (`nb`) must hold
    the same cells in the same order."""
    def shape(book):
        return [(c.cell_type, grading(c).get("grade_id", "")) for c in book.cells]
    if shape(nb) != shape(release):
        raise SystemExit(f"release/lab/{name} and notebooks/{name} do not hold the "
                         "same cells: run `make build` first")


def selfcheck_source(notebooks_dir: Path) -> Path | None:
    """The self-check page's notebook: the practice quiz, or None without it.
    (Never the graded quiz, whose key must stay in source/.)"""
    practice = notebooks_dir / PRACTICE
    return practice if practice.exists() else None


def practice_answer(number: int) -> str:
    """A practice question's answer, folded: the right letter and the reason
    for every option, from ragkit.quiz_practice; "" when it has no such
    question."""
    try:
        from ragkit.quiz_practice import question
        item = question(number)
    except (ImportError, LookupError, ValueError):
        return ""

    def inline(text: str) -> str:
        return mistune.html(text).strip().removeprefix("<p>").removesuffix("</p>")

    reasons = "\n".join(f"<li><strong>{html.escape(letter)}.</strong> "
                        f"{inline(item.why.get(letter, ''))}</li>"
                        for letter in item.options)
    return (f'<details class="site-fold site-fold-answer">\n<summary>Show the answer to '
            f"question {number}</summary>\n<p>The answer is <strong>"
            f"{html.escape(item.right)}</strong>. Why each option is right or "
            f"wrong:</p>\n<ul>\n{reasons}\n</ul>\n</details>")


def selfcheck_cells(nb) -> list:
    """The quiz's prose, each question followed by its folded answer: on a
    static page the quiz's widgets cannot run."""
    note = html_cell(
        '<p class="site-box">Each answer, with a reason for every option, is '
        "folded under its question: choose first, then open it. To pick an "
        "option and press <em>Check</em> instead, run the quiz in JupyterLab as "
        "the paragraphs above describe.</p>")
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cells.append(cell)
            if len(cells) == 1:
                cells.append(note)
            continue
        asked = re.search(r"\bquestion\((\d+)\)", cell.source)
        answer = practice_answer(int(asked.group(1))) if asked else ""
        if answer:
            cells.append(html_cell(answer))
    return cells


# ------------------------------------------------------------ rendering

class SiteExporter(HTMLExporter):
    """nbconvert's HTML exporter without its last step, a parse of the whole
    page to add placeholder alt texts and tabindex attributes: every figure
    here has its own alt text, tidy_notebook sets tabindex, and the parse
    was a third of the build's time."""

    def from_notebook_node(self, nb, resources=None, **kw):
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        self.register_filter("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self,
            resources=self._init_resources(resources)))
        return TemplateExporter.from_notebook_node(self, nb, resources, **kw)


def exporter(prose: Prose) -> HTMLExporter:
    # clean_html (bleach) guards against untrusted notebooks and is most of
    # nbconvert's time; these pages come from our own executed masters
    return SiteExporter(template_name="site", extra_template_basedirs=[str(TEMPLATES)],
                        filters={"clean_html": trusted_html, "site_prose": prose},
                        anchor_link_text="")


def render_notebook(export: HTMLExporter, nb, cells: list, title: str) -> str:
    book = nbformat.v4.new_notebook(metadata=nb.metadata)
    book.cells = cells
    book.metadata["title"] = title
    body, _ = export.from_notebook_node(book, resources={"metadata": {"name": title}})
    return body


class GuideRenderer(mistune.HTMLRenderer):
    """Markdown to HTML with GitHub's heading ids, raw HTML kept."""

    def __init__(self):
        super().__init__(escape=False)
        self.seen: dict[str, int] = {}

    def heading(self, text: str, level: int, **attrs) -> str:
        plain = html.unescape(re.sub(r"<[^>]+>", "", text))
        base = github_slug(plain)
        count = self.seen.get(base, 0)
        self.seen[base] = count + 1
        anchor = base if count == 0 else f"{base}-{count}"
        return f'<h{level} id="{anchor}">{text}</h{level}>\n'


def markdown_to_html(text: str) -> str:
    render = mistune.create_markdown(renderer=GuideRenderer(),
                                     plugins=["table", "strikethrough", "url"])
    return render(text)


# ------------------------------------------------------- HTML post-processing

def inside(node, names: tuple[str, ...]) -> bool:
    return any(parent.name in names for parent in node.parents)


HEADING = re.compile(r'<h([23]) id="([^"]+)">(.*?)</h\1>', re.S)
ANCHOR_LINK = re.compile(r'<a class="anchor-link" href="[^"]*">[^<]*</a>')
EMPTY_TH = re.compile(r"<th>(\s|&nbsp;)*</th>")
OUTPUT_BOX = re.compile(r'<div class="(jp-RenderedText|jp-RenderedHTMLCommon jp-RenderedHTML)'
                        r'( jp-OutputArea-output[^"]*)"')


@dataclass
class Prose:
    """What turns the HTML of prose (a markdown cell, a guide page) into the
    site's: links to pages, citations to references, `code` naming a page
    linked to it. One per build; `here` and `own` change with each page."""
    titles: dict[str, str]        # site path -> page title
    sources: dict[str, str]       # repository path -> site path
    references: dict[int, str]    # n -> short title of reference n
    unlinked: list[dict] = field(default_factory=list)
    here: str = "index.html"
    own: frozenset = frozenset()  # the reference numbers this page lists

    def __call__(self, fragment: str) -> str:
        soup = BeautifulSoup(fragment, "html.parser")
        self.rewrite_links(soup)
        self.link_citations(soup)
        return str(soup)

    def rewrite_links(self, soup) -> None:
        """Relative .ipynb/.md links point at the site's .html pages; a link
        to a page the site lacks becomes text; a link whose text is only a
        file name says the title of the page it opens instead."""
        folder = posixpath.dirname(self.here)
        for link in soup.find_all("a", href=True):
            url = link["href"]
            if not url or url.startswith(("#", "/")) or SCHEME.match(url):
                continue
            path, _, fragment = url.partition("#")
            stem, dot, ext = path.rpartition(".")
            if dot and ext in ("ipynb", "md"):
                path = f"{stem}.html"
            target = posixpath.normpath(posixpath.join(folder, path))
            if target in self.titles:
                link["href"] = path + (f"#{fragment}" if fragment else "")
                if PATHLIKE.match(link.get_text(strip=True)):
                    link.string = self.titles[target]
                continue
            self.unlinked.append({"page": self.here, "href": url, "text": link.get_text()})
            link.name = "span"
            link.attrs = {"class": "site-missing"}
            link.append(soup.new_string(" (not on this site)"))
        for code in soup.find_all("code"):
            target = self.sources.get(code.get_text().strip())
            if target and target != self.here and not inside(code, ("a", "pre")):
                code.wrap(soup.new_tag("a", href=relative(target, self.here)))

    def link_citations(self, soup) -> None:
        """`[n]` becomes a link to entry n: on this page when the page lists
        it (its item gets the id ref-n), else in the guide's list."""
        for item in soup.find_all("li"):
            found = re.match(r"\s*\[(\d{1,2})\]", item.get_text())
            if found and int(found.group(1)) in self.own:
                item["id"] = f"ref-{found.group(1)}"
        skip = ("a", "code", "pre", "script", "style", "h1", "h2", "h3", "h4", "h5",
                "h6", "strong", "summary", "nav")
        for text in list(soup.find_all(string=CITATION)):
            if inside(text, skip):
                continue
            item = text.find_parent("li")
            parts, last = [], 0
            for match in CITATION.finditer(text):
                if match.group(1) is None:
                    continue  # a formula: left for MathJax
                n = int(match.group(1))
                if item is not None and item.get("id") == f"ref-{n}" and match.start() < 4:
                    continue  # the entry's own number
                parts.append(NavigableString(text[last:match.start()]))
                target = (f"#ref-{n}" if n in self.own else
                          f"{relative('guide/references.html', self.here)}#ref-{n}")
                if self.here == "guide/references.html":
                    target = f"#ref-{n}"
                link = soup.new_tag("a", href=target, attrs={"class": "site-cite"})
                link.string = f"[{n}]"
                if self.references.get(n):
                    link["title"] = f"Reference {n}: {self.references[n]}"
                parts.append(link)
                last = match.end()
            if not parts:
                continue
            parts.append(NavigableString(text[last:]))
            for part in parts:
                text.insert_before(part)
            text.extract()


def own_references(markdown: str) -> frozenset:
    """The numbers of the entries a page's own "References" section lists."""
    found = re.search(r"^#+\s*References\b(.*)", markdown, re.M | re.S)
    if not found:
        return frozenset()
    return frozenset(int(n) for n in re.findall(r"^\s*[-*]\s*\[(\d{1,2})\]", found.group(1), re.M))


def table_of_contents(body: str) -> str:
    """A list of the page's h2 (and h3) headings, for pages with four or more."""
    heads = [(int(level), anchor, " ".join(re.sub(r"<[^>]+>", "", text).split()))
             for level, anchor, text in HEADING.findall(body)]
    if len(heads) < 4:
        return ""
    lines, in_sub = [], False
    for level, anchor, label in heads:
        link = f'<a href="#{anchor}">{label}</a>'
        if level == 3 and lines:
            if not in_sub:
                lines[-1] = lines[-1].removesuffix("</li>") + "\n<ul>"
                in_sub = True
        elif in_sub:
            lines.append("</ul></li>")
            in_sub = False
        lines.append(f"<li>{link}</li>")
    if in_sub:
        lines.append("</ul></li>")
    return ('<nav class="site-toc" aria-label="On this page">\n<details open>'
            "<summary>On this page</summary>\n<ul>\n" + "\n".join(lines)
            + "\n</ul>\n</details>\n</nav>\n")


def insert_toc(body: str) -> str:
    """The table of contents goes after the title: on a notebook page after
    the cell that holds the h1, elsewhere just before the first h2."""
    toc = table_of_contents(body)
    if not toc:
        return body
    title = body.find("<h1")
    cell = body.find('class="jp-Cell', title) if title >= 0 else -1
    at = body.rfind("<div", 0, cell) if cell >= 0 else -1
    if at < title:
        at = body.find("<h2")
    return body[:at] + toc + body[at:] if at >= 0 else body


def coloured_classes() -> frozenset:
    """The token classes (`k`, `s2`, ...) that CodeColours gives a colour."""
    rules = HtmlFormatter(style=CodeColours).get_style_defs(".highlight")
    return frozenset(re.findall(r"^\.highlight \.([\w-]+) \{", rules, re.M))


def plain_tokens(body: str, coloured: frozenset) -> str:
    """Highlighted code without the spans that colour nothing (names,
    punctuation, spaces): a third of a page's elements, and every one of
    them is work for a browser and for a checker of contrast."""
    def unwrap(match: re.Match) -> str:
        return match.group(0) if match.group(1) in coloured else match.group(2)
    return re.sub(r'<span class="([\w-]+)">([^<]*)</span>', unwrap, body)


def tidy_notebook(body: str) -> str:
    """Tables readable by a screen reader, outputs scrollable by keyboard,
    no empty anchor links after headings, no span that colours nothing."""
    body = plain_tokens(ANCHOR_LINK.sub("", body), coloured_classes())
    body = re.sub(r"<style[^>]*>.*?</style>", "", body, flags=re.S)  # pandas', once per table
    body = body.replace('<table border="1" class="dataframe">', '<table class="dataframe">')
    body = body.replace('<tr style="text-align: right;">', "<tr>")
    body = EMPTY_TH.sub("<td></td>", body)  # an empty header names nothing
    # an output may scroll sideways: tabindex lets the keyboard do it
    return OUTPUT_BOX.sub(lambda m: f'<div tabindex="0" class="{m.group(1)}{m.group(2)}"', body)


def glossary_index(body: str) -> str:
    """Give every glossary entry an anchor and put an A-Z line on top."""
    soup = BeautifulSoup(body, "html.parser")
    first_of: dict[str, str] = {}
    terms: dict[str, str] = {}
    for item in soup.find_all("li"):
        strong = item.find("strong")
        if strong is None or item.find(string=True) is not strong.find(string=True):
            continue
        term = re.sub(r"\s*\(.*\)", "", strong.get_text())
        anchor = "term-" + github_slug(term)
        item["id"] = anchor
        terms[term.lower()] = anchor
        if term[:1].isalpha():
            first_of.setdefault(term[:1].upper(), anchor)
    for em in soup.find_all("em"):  # "see *round limit*": link the term
        anchor = terms.get(em.get_text().strip().lower())
        if anchor and not inside(em, ("a",)):
            em.wrap(soup.new_tag("a", href=f"#{anchor}"))
    letters = []
    for code in range(ord("A"), ord("Z") + 1):
        letter = chr(code)
        letters.append(f'<a href="#{first_of[letter]}">{letter}</a>' if letter in first_of
                       else f'<span class="site-az-none">{letter}</span>')
    first_list = soup.find("ul")
    if first_list is not None and first_of:
        first_list.insert_before(BeautifulSoup(
            '<nav class="site-az" aria-label="Glossary from A to Z">\n'
            + "\n".join(letters) + "\n</nav>\n", "html.parser"))
    return str(soup)


def reference_titles(markdown: str) -> dict[int, str]:
    """n -> a short "Authors, title" of each entry of guide/references.md."""
    titles = {}
    for entry in re.split(r"\n(?=- )", markdown):
        found = re.match(r'- <a id="ref-(\d+)"></a>\*\*\[\d+\]\*\*\s*(.+)', entry, re.S)
        if found:
            text = plain_markdown(found.group(2))
            quoted = re.search(r'"([^"]+)"', text)
            lead = text.split('"')[0].strip().rstrip(".,")
            authors = lead.split(",")[0]
            if " and " in lead and lead.count(",") <= 2:  # two authors
                authors += " and " + lead.split(" and ")[1].split(",")[0]
            elif "," in lead:
                authors += " et al."
            titles[int(found.group(1))] = (f"{authors}, “{quoted.group(1).rstrip('.')}”"
                                           if quoted else text[:90])
    return titles


# --------------------------------------------------------------- the page

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{root}assets/site.css">
{scripts}</head>
<body class="site-{kind}">
<a class="site-skip" href="#content">Skip to the content</a>
<header class="site-header">
<nav class="site-nav" aria-label="Site">
{nav}
</nav>
<p class="site-edition">{edition}</p>
</header>
<main id="content">
{body}
</main>
{footer}</body>
</html>
"""

EDITION_LINE = {
    "reader": "Reader's edition: every task's solution is folded under it.",
    "student": "Course edition: the tasks are left for you to solve in JupyterLab.",
}


def page_html(page: Page, edition: str, nav_pages: list[tuple[str, str]],
              pager: tuple | None) -> str:
    root = relative("index.html", page.path).removesuffix("index.html")
    links = []
    for target, label in nav_pages:
        current = ' aria-current="page"' if target == page.path else ""
        links.append(f'<a href="{relative(target, page.path)}"{current}>{html.escape(label)}</a>')
    scripts = ""
    if page.math:
        scripts = (f'<script defer src="{root}assets/mathjax-config.js"></script>\n'
                   f'<script defer src="{root}assets/mathjax/{MATHJAX_SCRIPT}"></script>\n')
    footer = ""
    if pager:
        prev, nxt = pager
        parts = []
        if prev:
            parts.append(f'<a rel="prev" href="{relative(prev.path, page.path)}">'
                         f"← Previous: {html.escape(prev.short)}</a>")
        if nxt:
            parts.append(f'<a rel="next" href="{relative(nxt.path, page.path)}">'
                         f"Next: {html.escape(nxt.short)} →</a>")
        footer = ('<footer class="site-footer">\n<nav class="site-pager" '
                  'aria-label="Previous and next page">\n' + "\n".join(parts)
                  + "\n</nav>\n</footer>\n")
    title = page.title if page.path == "index.html" else f"{page.title} · {SITE_NAME}"
    return PAGE.format(title=html.escape(title), root=root, scripts=scripts,
                       kind=page.kind, nav="\n".join(links),
                       edition=html.escape(EDITION_LINE[edition]), body=page.body,
                       footer=footer)


def index_body(lectures: list[Page], selfcheck: Page | None, reading: list[Page],
               edition: str) -> str:
    def items(pages):
        return "\n".join(f'<li><a href="{p.path}">{html.escape(p.title)}</a></li>'
                         for p in pages)

    if edition == "reader":
        intro = ("<p>The reading edition of the course pack, for studying on your "
                 "own: every notebook run from top to bottom, with its outputs and "
                 "figures. Each task is followed by its solution, folded: try the "
                 "task first, then open <em>Show the solution</em>. Hidden tests "
                 "are named, not shown.</p>")
        work = ("<p>To work the tasks yourself, run <code>make lab</code> in the "
                "repository and open the student notebooks it copies.</p>")
    else:
        intro = ("<p>The course edition of the pack: the notebooks of every lecture "
                 "with the tasks left blank, as your assignment hands them out. "
                 "Read here; write and test your answers in JupyterLab.</p>")
        work = ("<p>Work the tasks in the student copy of the course: "
                "<code>make lab</code> opens them, <code>make check</code> runs "
                "their visible tests.</p>")
    practice = ""
    if selfcheck is not None:
        practice = (f'<h2>Self-check</h2>\n<ul class="site-selfcheck">\n'
                    f"{items([selfcheck])}\n</ul>\n")
    return (f"<h1>{html.escape(SITE_NAME)}</h1>\n{intro}\n"
            f'<h2>Lectures</h2>\n<ol class="site-lectures">\n{items(lectures)}\n</ol>\n'
            f"{practice}"
            f'<h2>Reading material</h2>\n<ul class="site-reading">\n{items(reading)}\n</ul>\n'
            f"{work}\n")


# ---------------------------------------------------------------- assets

def stylesheet() -> str:
    css = (HERE / "site.css").read_text(encoding="utf-8")
    colours = HtmlFormatter(style=CodeColours).get_style_defs(".highlight")
    # the formatter's own line numbers and its page-wide rules are not used
    colours = "\n".join(line for line in colours.splitlines()
                        if line.startswith(".highlight"))
    return css.rstrip("\n") + "\n\n/* code colours: tools/build_site.py CodeColours */\n" + colours + "\n"


def mathjax_files() -> dict[str, Path]:
    """{path under assets/mathjax/: file} of the MathJax the site ships."""
    spec = importlib.util.find_spec("mathjax")
    static = Path(spec.origin).parent / "static" / "mathjax" if spec and spec.origin else None
    if static is None or not (static / MATHJAX_PARTS[0]).is_file():
        raise SystemExit("MathJax is not installed (the django-static-mathjax package "
                         "of environment.yml): run `make site`, which installs it")
    files = {}
    for part in MATHJAX_PARTS:
        base = static / part
        found = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for path in found:
            rel = path.relative_to(static).as_posix()
            if rel not in MATHJAX_SKIP:
                files[rel.removeprefix("es5/")] = path
    return files


def check_out(out: Path) -> None:
    """Refuse an --out that is a file, or a non-empty folder this script did
    not make (before any work, so that a mistake costs nothing)."""
    if out.exists() and not out.is_dir():
        raise SystemExit(f"--out {out} is a file, not a folder")
    if out.exists() and any(out.iterdir()) and not (out / MANIFEST).exists():
        raise SystemExit(f"--out {out} is not empty and was not made by "
                         "tools/build_site.py; choose another --out")


def prepare_out(out: Path) -> None:
    """Empty `out` if this script made it, after check_out has accepted it."""
    check_out(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)


# ---------------------------------------------------------------- the build

def lecture_notebooks(notebooks_dir: Path) -> list[Path]:
    return sorted(p for p in notebooks_dir.glob("[0-9]*.ipynb"))


def plan(notebooks_dir: Path, guide_dir: Path, data_readme: Path):
    """Every page, read but not rendered (links and titles must be known
    first): (lectures, the self-check page or None, reading pages, index)."""
    paths = lecture_notebooks(notebooks_dir)
    if not paths:
        raise SystemExit(f"no notebooks in {notebooks_dir}: run `make build` first")
    lectures = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        title = notebook_title(nb, path.stem)
        lectures.append(Page(f"notebooks/{path.stem}.html", title, kind="lecture",
                             short=title.split(":")[0], extra={"nb": nb, "file": path}))
    selfcheck = None
    source = selfcheck_source(notebooks_dir)
    if source is not None:
        nb = nbformat.read(source, as_version=4)
        selfcheck = Page(f"notebooks/{source.stem}.html", notebook_title(nb, source.stem),
                         kind="selfcheck", short="Self-check", extra={"nb": nb, "file": source})
    guide_files = sorted(guide_dir.glob("*.md"), key=lambda p: (
        GUIDE_ORDER.index(p.name) if p.name in GUIDE_ORDER else len(GUIDE_ORDER), p.name))
    markdown = [(p, f"guide/{p.stem}.html", "guide") for p in guide_files]
    if data_readme.exists():
        markdown.append((data_readme, "data/README.html", "data"))
    reading = []
    for path, site_path, kind in markdown:
        text = path.read_text(encoding="utf-8")
        title = first_heading(text, path.stem)
        short = ("Reading guide" if path.stem == "README" else title) if kind == "guide" \
            else "The data"
        reading.append(Page(site_path, title, kind=kind, short=short, extra={
            "text": text, "source": f"{kind}/{path.name}"}))
    return lectures, selfcheck, reading, Page("index.html", SITE_NAME, kind="index")


def edition_cells(page: Page, edition: str, release_dir: Path) -> list:
    """A notebook page's cells as the edition shows them."""
    nb = page.extra["nb"]
    if page.kind == "selfcheck":
        cells = selfcheck_cells(nb)
    elif edition == "student":
        handed_path = release_dir / page.extra["file"].name
        if not handed_path.exists():
            raise SystemExit(f"{handed_path} is missing: run `make build` first")
        handed = nbformat.read(handed_path, as_version=4)
        nb = nbformat.from_dict({**nb, "cells": [c for c in nb.cells if not is_check(c)]})
        aligned(nb, handed, handed_path.name)
        cells = student_cells(nb, handed)
    else:
        cells = reader_cells(nb)
    for n, cell in enumerate(cells):
        cell.setdefault("id", f"site-piece-{n}")  # pieces the site made
    return cells


def render_notebook_page(page: Page, cells: list, export: HTMLExporter, prose: Prose,
                         files: dict[str, bytes]) -> None:
    holder = nbformat.NotebookNode(cells=cells)
    page.extra["figures"] = extract_figures(holder, page.extra["file"].stem, "notebooks",
                                            files)
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    page.math = MATH.search(text) is not None
    prose.here, prose.own = page.path, own_references(text)
    page.body = insert_toc(tidy_notebook(render_notebook(export, page.extra["nb"], cells,
                                                         page.title)))


def render_markdown_page(page: Page, prose: Prose) -> None:
    text = page.extra["text"]
    prose.here, prose.own = page.path, frozenset(
        int(n) for n in re.findall(r'<a id="ref-(\d+)"></a>', text))
    body = prose(markdown_to_html(text))
    page.math = MATH.search(text) is not None
    page.body = glossary_index(body) if page.path == "guide/glossary.html" \
        else insert_toc(body)


def build(out: Path, edition: str = "reader", notebooks_dir: Path = ROOT / "notebooks",
          release_dir: Path = ROOT / "release" / "lab", guide_dir: Path = ROOT / "guide",
          data_readme: Path = ROOT / "data" / "README.md") -> dict:
    """Write the site of `edition` to `out` and return its manifest."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    check_out(out)
    lectures, selfcheck, reading, index = plan(notebooks_dir, guide_dir, data_readme)
    order = lectures + ([selfcheck] if selfcheck else [])
    every = order + reading + [index]
    sources = {f"notebooks/{Path(p.path).stem}.ipynb": p.path for p in order}
    sources.update({p.extra["source"]: p.path for p in reading})
    references = guide_dir / "references.md"
    prose = Prose(titles={p.path: p.title for p in every}, sources=sources,
                  references=reference_titles(references.read_text(encoding="utf-8"))
                  if references.exists() else {})
    export = exporter(prose)
    files: dict[str, bytes] = {}
    for page in order:
        render_notebook_page(page, edition_cells(page, edition, release_dir), export,
                             prose, files)
    for page in reading:
        render_markdown_page(page, prose)
    index.body = index_body(lectures, selfcheck, reading, edition)

    nav_pages = [("index.html", "Contents")] + [(p.path, p.short) for p in reading]
    for page in every:
        at = order.index(page) if page in order else None
        pager = None if at is None else (order[at - 1] if at > 0 else None,
                                         order[at + 1] if at + 1 < len(order) else None)
        files[page.path] = page_html(page, edition, nav_pages, pager).encode("utf-8")
    files["assets/site.css"] = stylesheet().encode("utf-8")
    if any(p.math for p in every):
        files["assets/mathjax-config.js"] = MATHJAX_CONFIG.encode("utf-8")
        for rel, path in mathjax_files().items():
            files[f"assets/mathjax/{rel}"] = path.read_bytes()

    manifest = {
        "edition": edition,
        "pages": sorted(p.path for p in every),
        "lectures": [p.path for p in lectures],
        "selfcheck": selfcheck.path if selfcheck else None,
        "math_pages": sorted(p.path for p in every if p.math),
        "figures": sum(p.extra.get("figures", 0) for p in lectures),
        "unlinked": prose.unlinked,
        "bytes": {"html": sum(len(b) for k, b in files.items() if k.endswith(".html")),
                  "figures": sum(len(b) for k, b in files.items() if "/img/" in k),
                  "assets": sum(len(b) for k, b in files.items() if k.startswith("assets/")),
                  "total": sum(len(b) for b in files.values())},
    }
    prepare_out(out)
    for rel in sorted(files):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[rel])
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--student", action="store_true",
                        help="build the graded course's edition (no solution, no hidden "
                             "test, no key) instead of the reader's")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder to write the site to (default: site/, or "
                             "dist/student-site/ with --student)")
    args = parser.parse_args(argv)
    edition = "student" if args.student else "reader"
    out = (args.out or DEFAULT_OUT[edition]).resolve()
    start = time.perf_counter()
    manifest = build(out, edition)
    size = manifest["bytes"]
    print(f"site ({edition}'s edition): {len(manifest['pages'])} pages, "
          f"{size['total'] / 1e6:.2f} MB ({size['html'] / 1e6:.2f} MB of pages, "
          f"{size['figures'] / 1e6:.2f} MB of figures, {size['assets'] / 1e6:.2f} MB "
          f"of styles and MathJax) in {time.perf_counter() - start:.1f} s "
          f"-> {out / 'index.html'}")
    if manifest["unlinked"]:
        targets = sorted({u["href"] for u in manifest["unlinked"]})
        print(f"links to pages the site does not have, left as text: {', '.join(targets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
