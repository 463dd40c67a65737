"""safe_notebook.py on written answers a hostile student could hand in.

The formgrader page that shows a submission is the instructor's: whatever
an answer holds, the page must not load or link to the server's own URLs
(`/logout`, `/hub/...`, `/api/...`, in any spelling a browser accepts), nor
dress the answer in the page's own classes and ids (Bootstrap's
`modal-backdrop`, the notebook style's `#pager`). Each answer is sanitised
as `course.py grade` does it, then rendered as the formgrader renders it
and parsed as a browser parses it; what is left must not hold the attack.
An honest answer (its own images, code, tables, maths, links to papers)
must come through untouched. tests/test_formgrader_browser.py shows the
same in a real browser.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.reports import safe_notebook  # noqa: E402

# (what the answer tries, the answer, an attribute and a text no attribute
# of that name may hold afterwards; "*" is any attribute)
HOSTILE = [
    ("logout as the page opens", '<img src="/logout">', "*", "logout"),
    ("markdown image of the hub's logout", "![chart](/hub/logout)", "*", "logout"),
    ("the server's API as an image", '<img src="/api/kernels">', "*", "/api/"),
    ("climbing out of the submission", '<img src="../../../logout">', "*", "logout"),
    ("climbing, percent-encoded", '<img src="%2e%2E/%2e%2e/%2E%2e/logout">', "*", "logout"),
    ("climbing with backslashes", '<img src="..\\..\\..\\logout">', "*", "logout"),
    ("climbing after files/", '[notes](files/../../../hub/logout)', "*", "logout"),
    ("a link two folders up", "[grades](../../api/grades)", "*", "/api/"),
    ("the host, scheme-relative", '<img src="//127.0.0.1:8890/logout">', "*", "logout"),
    ("the host after a backslash", '<img src="/\\127.0.0.1:8890/logout">', "*", "logout"),
    ("the host, mixed case", '<img src="HtTp://127.0.0.1:8890/logout">', "*", "logout"),
    ("a tab inside the scheme", '<img src="ht&#9;tp://localhost:8890/logout">', "*", "logout"),
    ("spaces and a newline before it", '<img src=" &#10; http://[::1]:8890/logout">', "*",
     "logout"),
    ("a link to logout", "[see my notes](/logout)", "*", "logout"),
    ("a link to the API", '<a href="/api/shutdown">results</a>', "*", "/api/"),
    ("a link to localhost", '<a href="http://localhost:8890/hub/logout">x</a>', "*", "logout"),
    ("a link to a decimal IP", '<a href="http://2130706433/logout">x</a>', "*", "logout"),
    ("a link to a short IP", '<a href="http://127.1:8890/logout">x</a>', "*", "logout"),
    ("a percent-encoded host", '<a href="http://127.0.0.%31:8890/logout">x</a>', "*", "logout"),
    ("a host without a dot", '<a href="http://hub:8000/hub/logout">x</a>', "*", "logout"),
    ("a named host on a port", '<a href="https://hub.example.edu:8443/hub/logout">x</a>',
     "*", "logout"),
    ("a name of the private network", '<a href="https://hub.course.internal/hub/logout">x</a>',
     "*", "logout"),
    ("a full-page backdrop", '<div class="modal-backdrop fade in"></div>', "class",
     "modal-backdrop"),
    ("a fake banner on top", '<div class="navbar navbar-fixed-top alert alert-success">'
     "Score saved</div>", "class", "fixed"),
    ("a class on a highlighted span", '<span class="k affix">x</span>', "class", "affix"),
    ("a language that is not one", '<code class="language-x hidden">x</code>', "class",
     "hidden"),
    ("the notebook style's fixed pager", '<h2 id="pager">x</h2>', "id", "pager"),
    ("a heading named like the page's header", "## Header", "id", "header"),
    ("an id on a span", '<span id="statusmessage-2">x</span>', "id", "statusmessage"),
]

# attributes that load or link and were never allowed: still dropped
ALREADY_DROPPED = [
    '<img srcset="/logout 1x">', '<video poster="/logout"></video>',
    '<table background="/logout"><tr><td>x</td></tr></table>',
    '<form action="/logout"><button formaction="/logout">go</button></form>',
    '<svg><a xlink:href="/logout"><text>x</text></a></svg>',
    '<p style="background: url(/logout)">x</p>',
    '<td style="text-align: left; background-image: url(/logout)">x</td>',
    '<meta http-equiv="refresh" content="0; url=/logout">',
]

HONEST = """# Chunk size and recall

Sentence chunks kept each answer whole ([Lewis et al.](https://arxiv.org/abs/2005.11401);
[my notes](notes.html), [the table below](#Chunk-size-and-recall),
[the reading list](../guide/references.md),
[mail me](mailto:amy@example.org)).

![hit@5 against chunk size](chart.png) ![the same, zoomed](figures/zoom%201.png)
![inline](data:image/png;base64,iVBORw0KGgo=)

```python
def hit_at_k(ranked, gold, k=5):
    return float(gold in ranked[:k])  # one question
```

```rubric
a block in a language Pygments does not know
```

| chunk size | hit@5 |
|-----------:|:-----:|
| 100 | 0.62 |
| 200 | 0.71 |

- [x] ran the study
- [ ] bootstrap intervals

$\\mathrm{hit@}k = \\frac{1}{|Q|}\\sum_q [\\mathrm{rank}_q \\le k]$
"""
PANDAS_TABLE = ('<div><table border="1" class="dataframe">\n<thead><tr style="text-align: '
                'right;"><th></th><th>hit@5</th></tr></thead>\n<tbody><tr><th>100</th>'
                "<td>0.62</td></tr></tbody></table></div>")


def notebook_of(*sources: str):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(s) for s in sources])


def attributes(html: str) -> list[tuple[str, str, str]]:
    """(tag, attribute, value) of every element of `html` as a browser
    parses it, the value with its percent-encoding undone."""
    from bleach._vendor import html5lib

    root = html5lib.parseFragment(html, container="div", namespaceHTMLElements=False)
    return [(str(e.tag), str(name).lower(), unquote(unquote(value)).lower())
            for e in root.iter() if isinstance(e.tag, str) for name, value in e.attrib.items()]


def shown(cell_source: str) -> list[tuple[str, str, str]]:
    """The attributes the formgrader page gets from a sanitised markdown cell."""
    return attributes(safe_notebook.render_markdown(cell_source))


@pytest.mark.parametrize("answer, name, text", [c[1:] for c in HOSTILE],
                         ids=[c[0] for c in HOSTILE])
def test_a_hostile_answer_loses_what_would_act_on_the_page(answer, name, text):
    """A written answer that would load, link to or style with what is the
    page's own is changed, and what is left holds none of it."""
    nb = notebook_of(answer)
    assert text in str(shown(answer)).lower(), "the attack is not in the rendered answer"
    changes = safe_notebook.sanitize_notebook(nb)
    left = [a for a in shown(nb.cells[0].source) if name in ("*", a[1]) and text in a[2]]
    assert changes and not left, f"left on the page: {left} (changes: {changes})"


@pytest.mark.parametrize("answer", ALREADY_DROPPED)
def test_attributes_that_load_are_dropped_from_any_tag(answer):
    """srcset, poster, background, (form)action, xlink:href, a style's url()
    and a meta refresh are not allowed at all: nothing names /logout."""
    nb = notebook_of(answer)
    safe_notebook.sanitize_notebook(nb)
    left = [a for a in shown(nb.cells[0].source) if "logout" in a[2]]
    assert not left, f"left on the page: {left}"


def test_an_output_that_loads_the_servers_urls_falls_back_to_text():
    """A code cell's HTML output with `<img src="/logout">` is not shown as
    HTML; its plain text is."""
    nb = notebook_of()
    nb.cells.append(nbformat.v4.new_code_cell("show()", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": '<img src="/logout"><b>plot</b>',
                              "text/plain": "<plot>"})]))
    changes = safe_notebook.sanitize_notebook(nb)
    data = nb.cells[0].outputs[0]["data"]
    assert changes and "logout" not in str(data) and data["text/plain"] == "<plot>", data


def test_no_id_of_the_pages_own_style_survives():
    """Every `#id` the formgrader page's styles (the classic notebook style
    nbconvert inlines, formgrader's own) give rules to, written as a
    heading's id by a student, is dropped: nothing of the student's takes
    a fixed position or a mark box's place."""
    from jupyter_core.paths import jupyter_path
    from nbgrader.server_extensions.formgrader import handlers

    styles = [Path(p) for p in jupyter_path("nbconvert", "templates", "classic", "static",
                                            "style.css") if Path(p).is_file()][:1]
    styles.append(Path(handlers.static_path) / "css" / "formgrade.css")
    assert all(p.is_file() for p in styles) and len(styles) == 2, styles
    # the selectors' ids: not a colour, nor a fragment inside a font's url(...)
    rules = [re.sub(r"url\([^)]*\)", "", p.read_text()) for p in styles]
    ids = {i for text in rules for i in re.findall(r"#([A-Za-z_][\w-]*)", text)
           if not re.fullmatch(r"[0-9a-fA-F]{3,8}", i)}
    assert {"header", "pager", "statusmessage", "notebook-container"} <= ids
    nb = notebook_of("\n\n".join(f'<h2 id="{i}">x</h2>' for i in sorted(ids)))
    safe_notebook.sanitize_notebook(nb)
    kept = {a[2] for a in shown(nb.cells[0].source) if a[1] == "id"}
    assert not kept & {i.lower() for i in ids}, sorted(kept & ids)


def test_an_honest_answer_is_kept_as_written():
    """Own images (a data: one too), links to a paper, a note, an anchor and
    a mail address, highlighted code, a table, a task list and maths, and a
    pandas table as output: nothing is changed."""
    nb = notebook_of(HONEST)
    nb.cells.append(nbformat.v4.new_code_cell("table", outputs=[nbformat.v4.new_output(
        "execute_result", data={"text/html": PANDAS_TABLE, "text/plain": "table"},
        execution_count=1)], execution_count=1))
    assert safe_notebook.sanitize_notebook(nb) == []
    assert nb.cells[0].source == HONEST
    assert nb.cells[1].outputs[0]["data"]["text/html"] == PANDAS_TABLE
    html = safe_notebook.render_markdown(HONEST)
    # what the page shows: the images, Pygments' classes, the table, the maths
    found = attributes(html)
    assert ("img", "src", "chart.png") in found and ("img", "src", "figures/zoom 1.png") in found
    assert ("span", "class", "k") in found and ("code", "class", "language-rubric") in found
    assert "<table>" in html and "<th style=\"text-align:right\">chunk size</th>" in html
    assert "\\mathrm{hit@}k" in html
