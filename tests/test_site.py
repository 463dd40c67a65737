"""The site of `make site` (tools/build_site.py), both editions, built once each.

- The student's edition (`make site STUDENT=1`) holds no line of any
  master's solution or hidden tests, on any page (the student bundle's leak
  check, tests/test_student_bundle.py, run over the text a reader sees); the
  reader's edition holds the solutions, each folded under a closed "Show the
  solution", and no hidden test. Neither shows the graded quiz's key.
- What the reader's pages fold or summarise: hidden test cells as one line,
  the setup cell's test helpers, the check cells; figures as files with their
  title and caption as alt text; one stylesheet; citations, glossary, tables
  of contents.
- Both sites read offline in headless Chromium (tests/test_browser.py's
  fixture) with every http(s) request blocked: every page opens without a
  console error, every link inside the site reaches a page and an anchor
  that exist, every image loads, every formula is typeset by the MathJax the
  site ships, and axe-core finds no serious or critical violation.
"""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from tests.test_browser import browser  # noqa: F401 (a fixture)
from tests.test_quiz import graded, nb, setup_namespace  # noqa: F401 (fixtures)
from tests.test_quiz import leaks as quiz_leaks
from tests.test_student_bundle import (HIDDEN, MASTERS, master_lines, meaningful,
                                       regions, secrets)  # noqa: F401 (a fixture)
from tools import build_site as site_tool
from autograder.run.rag_feedback import (  # noqa: E402 (tools.build_site put autograder/ on the path)
    docstring)

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "build_site.py"
LECTURES = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
BLOCKED = ("serious", "critical")


def axe_script() -> str:
    """axe-core's axe.min.js from the axe-playwright-python package."""
    import importlib.util
    spec = importlib.util.find_spec("axe_playwright_python")
    if spec is None or spec.origin is None:
        pytest.fail("axe-playwright-python is not installed: run `make test` (it "
                    "installs environment.yml)", pytrace=False)
    return (Path(spec.origin).parent / "axe.min.js").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """Both editions, built side by side by the command line:
    {edition: (folder, manifest)}."""
    where = tmp_path_factory.mktemp("sites")
    runs = {}
    for edition in ("reader", "student"):
        args = [sys.executable, str(SCRIPT), "--out", str(where / edition)]
        runs[edition] = subprocess.Popen(args + (["--student"] if edition == "student" else []),
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
    built = {}
    for edition, proc in runs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"tools/build_site.py ({edition}) failed:\n{err[-5000:]}"
        print(out.strip())
        folder = where / edition
        built[edition] = folder, json.loads((folder / "site.json").read_text())
    return built


def page_text(path: Path) -> str:
    """The text a reader of a page sees (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def page_lines(path: Path) -> set[str]:
    return {line.strip() for line in page_text(path).splitlines()}


def pages(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.html"))


def hidden_secrets() -> set[str]:
    """Lines of the masters' hidden tests that a reader may not read: not
    in the released text, the package or a (folded) solution."""
    hidden, public = set(), set()
    for master in MASTERS:
        public |= master_lines(master)[1]
        for cell in nbformat.read(master, as_version=4).cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                public.update(line.strip() for line in cell.source.splitlines())
            else:
                hidden.update(regions(cell.source, *HIDDEN)[0])
    for module in (ROOT / "ragkit").rglob("*.py"):
        public.update(line.strip() for line in module.read_text(encoding="utf-8").splitlines())
    return {line for line in hidden - public if meaningful(line)}


# ------------------------------------------------------------- what it holds

def test_both_editions_have_every_page_and_no_lecture_ten(sites):
    """Nine lectures in order, the guide, the data's README; the self-check
    page is the practice quiz when it exists, and never numbered."""
    practice = (ROOT / "notebooks" / site_tool.PRACTICE).exists()
    for edition, (folder, manifest) in sites.items():
        assert manifest["edition"] == edition
        assert manifest["lectures"] == [f"notebooks/{p.stem}.html" for p in LECTURES]
        for page in ("index.html", "guide/README.html", "guide/glossary.html",
                     "guide/references.html", "data/README.html"):
            assert page in manifest["pages"], f"{edition}: {page} is missing"
        assert manifest["selfcheck"] == ("notebooks/quiz_practice.html" if practice
                                         else None)
        index = (folder / "index.html").read_text(encoding="utf-8")
        lectures = re.search(r'<ol class="site-lectures">(.*?)</ol>', index, re.S).group(1)
        assert lectures.count("<li>") == len(LECTURES)
        if manifest["selfcheck"]:
            assert manifest["selfcheck"] not in lectures and manifest["selfcheck"] in index
        assert manifest["unlinked"] == [], manifest["unlinked"]
        assert set(manifest["pages"]) == {p.relative_to(folder).as_posix()
                                          for p in pages(folder)}
        size = manifest["bytes"]
        print(f"{edition}: {size['total'] / 1e6:.2f} MB ({size['html'] / 1e6:.2f} MB "
              f"pages, {size['figures'] / 1e6:.2f} MB figures, "
              f"{size['assets'] / 1e6:.2f} MB styles and MathJax)")


def test_the_student_edition_holds_no_line_of_a_solution_or_hidden_test(sites, secrets):
    """Every page of the student's site against every solution and hidden
    line of every master; the reader's site, against the hidden lines."""
    folder = sites["student"][0]
    found = {p.relative_to(folder).as_posix(): sorted(page_lines(p) & secrets)[:3]
             for p in pages(folder) if page_lines(p) & secrets}
    assert found == {}, f"answers on the student's site: {found}"
    hidden = hidden_secrets()
    assert len(hidden) > 100
    folder = sites["reader"][0]
    found = {p.relative_to(folder).as_posix(): sorted(page_lines(p) & hidden)[:3]
             for p in pages(folder) if page_lines(p) & hidden}
    assert found == {}, f"hidden tests on the reader's site: {found}"
    for edition, (folder, _) in sites.items():
        marked = [p.name for p in pages(folder)
                  if re.search(r"(BEGIN|END) (SOLUTION|HIDDEN TESTS)", p.read_text())]
        assert marked == [], f"{edition}: nbgrader markers on {marked}"


def test_the_reader_edition_folds_every_solution_and_only_there(sites, secrets):
    """The same check finds the solutions on the reader's site (so it can
    find a leak), and once the closed "Show the solution" blocks are cut
    out, none is left."""
    folder = sites["reader"][0]
    fold = re.compile(r'<details class="site-fold site-fold-solution">.*?</details>', re.S)
    for path in LECTURES:
        page = folder / "notebooks" / f"{path.stem}.html"
        text = page.read_text(encoding="utf-8")
        tasks = sum(1 for c in nbformat.read(path, as_version=4).cells
                    if c.metadata.get("nbgrader", {}).get("solution"))
        folds = fold.findall(text)
        assert len(folds) >= tasks, f"{page.name}: {len(folds)} folded solutions, {tasks} tasks"
        assert all("<summary>Show the solution" in f for f in folds)
        assert page_lines(page) & secrets, f"{page.name} shows no solution at all"
        outside = html.unescape(re.sub(r"<[^>]+>", "", fold.sub("", text)))
        left = {line.strip() for line in outside.splitlines()} & secrets
        assert left == set(), f"{page.name}: solution lines outside the folds: {sorted(left)[:3]}"


def test_no_graded_quiz_answer_and_the_practice_answers_folded(sites, graded):
    """tests/test_quiz.py's scan for the graded key, in every form it knows,
    finds nothing on any page; the practice quiz's own answers are there,
    one closed fold per question."""
    for edition, (folder, manifest) in sites.items():
        found = {p.name: hits for p in pages(folder)
                 if (hits := quiz_leaks(p.name, page_text(p).encode(), graded))}
        assert found == {}, f"{edition}: the graded quiz's key on {found}"
        if manifest["selfcheck"]:
            text = (folder / manifest["selfcheck"]).read_text(encoding="utf-8")
            answers = re.findall(r'<details class="site-fold site-fold-answer">\s*'
                                 r"<summary>Show the answer to question (\d+)", text)
            assert answers == [str(n) for n in range(1, 11)]


def test_hidden_tests_helpers_and_checks_are_summarised_or_folded(sites):
    """A hidden test cell is one line; the cells that check the prose's
    numbers sit in closed folds. The test plumbing every notebook shares
    (error_of, check_error, same_frame) is imported from ragkit.checks in
    one line, never defined on the page; a helper a setup cell still
    defines for its own tests only sits in a closed fold."""
    folder = sites["reader"][0]
    for path in LECTURES:
        book = nbformat.read(path, as_version=4)
        text = (folder / "notebooks" / f"{path.stem}.html").read_text(encoding="utf-8")
        hidden = [c for c in book.cells if "### BEGIN HIDDEN TESTS" in c.source]
        notes = re.findall(r'<p class="site-note">\(hidden tests[^<]*\)</p>', text)
        assert len(notes) == len(hidden) > 0, f"{path.name}: {len(notes)} notes"
        for cell, note in zip(hidden, notes):  # each docstring whole, never cut
            tail = " ".join(docstring(cell.source).rstrip(".").split()[-4:])
            assert tail in " ".join(html.unescape(note).split()), (path.name, tail, note)
        checks = [c for c in book.cells if site_tool.is_check(c)]
        folded = re.findall(r'<details class="site-fold site-fold-check">', text)
        assert len(folded) == len(checks), f"{path.name}: {len(folded)} of {len(checks)}"
        setup = next(c for c in book.cells if site_tool.is_setup(c))
        assert re.search(r"^from ragkit\.checks import .*\b(check_error|error_of|same_frame)\b",
                         setup.source, re.M), f"{path.name}: no test helpers from ragkit.checks"
        page = page_text(folder / "notebooks" / f"{path.stem}.html")
        assert re.search(r"def (error_of|check_error|same_frame|same_cell)\(", page) is None, \
            f"{path.name}: the page defines a shared test helper again"
        helpers = re.search(r'<details class="site-fold site-fold-helpers">(.*?)</details>',
                            text, re.S)
        shown = html.unescape(re.sub(r"<[^>]+>", "", helpers.group(1))) if helpers else ""
        own = site_tool.test_helpers(setup.source, site_tool.reader_sources(book))
        assert all(f"def {name}(" in shown for name in own), f"{path.name}: {own} not folded"
        assert re.search(r'<details class="site-fold[^"]*" open', text) is None


def test_figures_are_files_with_their_title_and_caption_as_alt_text(sites):
    for edition, (folder, manifest) in sites.items():
        alts = []
        for page in pages(folder):
            alts += re.findall(r'<img src="([^"]+)" alt="([^"]*)">', page.read_text())
            assert "data:image" not in page.read_text(), f"{page.name} inlines an image"
        assert len(alts) == manifest["figures"] > 0
        for src, alt in alts:
            alt = html.unescape(alt)
            assert re.match(r"Figure \w+(\.\w+)*: ", alt) and len(alt.split(". ", 1)) == 2, \
                f"{edition} {src}: alt text {alt[:80]!r} is not its title and caption"
            assert "No description has been provided" not in alt
    expected = sum(1 for path in LECTURES for cell in nbformat.read(path, as_version=4).cells
                   if cell.cell_type == "code" for out in cell.get("outputs", [])
                   if {"image/png", "image/svg+xml"} & set(out.get("data", {})))
    assert sites["reader"][1]["figures"] == expected


def test_one_stylesheet_and_pages_that_find_their_way(sites):
    """No inline CSS; the page language; one named navigation; a table of
    contents on every lecture; citations and glossary terms linked."""
    for edition, (folder, manifest) in sites.items():
        for page in pages(folder):
            text = page.read_text(encoding="utf-8")
            assert text.startswith('<!DOCTYPE html>\n<html lang="en">')
            assert "<style" not in text and text.count('rel="stylesheet"') == 1, page.name
            assert text.count('<nav class="site-nav" aria-label="Site">') == 1
            labels = re.findall(r'<nav [^>]*aria-label="([^"]+)"', text)
            assert len(labels) == len(set(labels)), f"{page.name}: {labels}"
            assert ">¶<" not in text and "anchor-link" not in text
        for lecture in manifest["lectures"]:
            text = (folder / lecture).read_text(encoding="utf-8")
            assert 'aria-label="On this page"' in text, f"{lecture} has no contents"
            assert 'class="site-cite"' in text, f"{lecture} links no citation"
            assert len(text) < 400_000, f"{lecture} weighs {len(text)} bytes"
        glossary = (folder / "guide" / "glossary.html").read_text(encoding="utf-8")
        letters = re.search(r'<nav [^>]*class="site-az"[^>]*>(.*?)</nav>', glossary, re.S).group(1)
        assert re.findall(r">([A-Z])<", letters) == [chr(c) for c in range(65, 91)]
        terms = re.findall(r'<li id="term-([\w-]+)">', glossary)
        assert len(terms) >= 40 and f'href="#term-{terms[0]}"' in letters


# ------------------------------------------------------------ edges, cheaply

def test_bad_arguments_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="edition"):
        site_tool.build(tmp_path / "x", edition="teacher")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(SystemExit, match="--out .* not empty"):
        site_tool.build(foreign, "reader")
    assert (foreign / "notes.txt").read_text() == "keep me"
    with pytest.raises(SystemExit, match="--out .* is a file"):
        site_tool.build(foreign / "notes.txt", "reader")
    lone = tmp_path / "notebooks"
    lone.mkdir()
    (lone / LECTURES[0].name).write_bytes(LECTURES[0].read_bytes())
    with pytest.raises(SystemExit, match="missing: run `make build`"):
        site_tool.build(tmp_path / "out", "student", notebooks_dir=lone,
                        release_dir=tmp_path / "no-release")


def test_two_builds_give_the_same_bytes(tmp_path):
    """Byte-reproducible, on a one-lecture pack (the whole pack takes the
    same path, only longer)."""
    lone = tmp_path / "notebooks"
    lone.mkdir()
    (lone / LECTURES[0].name).write_bytes(LECTURES[0].read_bytes())
    digests = []
    for n in range(2):
        out = tmp_path / f"site{n}"
        site_tool.build(out, "reader", notebooks_dir=lone)
        digests.append({p.relative_to(out).as_posix(): p.read_bytes()
                        for p in sorted(out.rglob("*")) if p.is_file()})
    assert digests[0].keys() == digests[1].keys()
    assert [k for k in digests[0] if digests[0][k] != digests[1][k]] == []


# ------------------------------------------------------------- in a browser

PAGE_STATE = """
const done = arguments[arguments.length - 1];
const typeset = window.MathJax && MathJax.startup ? MathJax.startup.promise
                                                 : Promise.resolve();
typeset.then(() => {
  const text = document.body.innerText;
  done({
    ids: [...document.querySelectorAll('[id]')].map(n => n.id),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    images: [...document.images].map(i => [i.complete, i.naturalWidth, i.alt]),
    formulas: document.querySelectorAll('mjx-container').length,
    errors: document.querySelectorAll('mjx-merror').length,
    tex: (text.match(/\\$\\$|\\$[^$\\s][^$\\n]*\\$/g) || []).slice(0, 3),
    closed: [...document.querySelectorAll('details.site-fold')].filter(d => !d.open).length,
    text: text.length,
  });
});
"""

# the two rules that compare colours (text against its background, a link
# against the text around it) cost axe-core a map of every element's box on
# the page, several seconds on a lecture page, whichever elements they are
# asked about. The text of these pages lies on its ancestors' backgrounds
# only (nothing is positioned over it), so the second run checks one visible
# element per combination of colour, font and background chain, with the
# folds opened as a reader opens them and every other element out of the
# layout (display: none keeps the document, and so every selector, as it is)
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
AXE_RUN = """
const done = arguments[arguments.length - 1];
const colourRules = arguments[0];
const summary = r => r.violations.map(
  v => [v.id, v.impact, v.nodes.length, v.nodes[0].target.join(' ')]);
const options = {preload: false, resultTypes: ['violations']};
const others = Object.fromEntries(colourRules.map(id => [id, {enabled: false}]));
axe.run(document, {...options, rules: others}).then(all => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const samples = new Map();
  for (const el of document.querySelectorAll('body *')) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.checkVisibility({opacityProperty: true, visibilityProperty: true})) {
      continue;
    }
    const style = getComputedStyle(el);
    const key = [el.tagName === 'A', style.color, style.fontSize, style.fontWeight,
                 style.textDecorationLine, style.textShadow];
    for (let at = el; at; at = at.parentElement) {
      const box = getComputedStyle(at);
      key.push(box.backgroundColor, box.backgroundImage, box.opacity);
      if (!/^(rgba\(.*, 0\)|transparent)$/.test(box.backgroundColor)) break;
    }
    if (!samples.has(key.join(';'))) samples.set(key.join(';'), el);
  }
  const keep = new Set();
  for (const el of samples.values()) {
    for (let at = el; at; at = at.parentElement) keep.add(at);
    el.querySelectorAll('*').forEach(inner => keep.add(inner));
  }
  for (const el of document.body.querySelectorAll('*')) {
    if (!keep.has(el) && keep.has(el.parentElement)) {
      el.style.setProperty('display', 'none', 'important');
    }
  }
  const context = {include: [...samples.values()].map(el => [el])};
  return axe.run(context, {...options, runOnly: {type: 'rule', values: colourRules}})
    .then(colours => done([summary(all).concat(summary(colours)), samples.size]));
});
"""


def pages_to_read(sites) -> dict[str, list[str]]:
    """Every page of the reader's site, and the student site's pages that
    differ from the reader's by more than the line naming the edition (the
    guide, the data's README and the practice quiz are the same pages)."""
    (reader, manifest), (student, other) = sites["reader"], sites["student"]
    edition = re.compile(r'<p class="site-edition">[^<]*</p>')

    def same(page: str) -> bool:
        mine, theirs = student / page, reader / page
        return theirs.exists() and edition.sub("", mine.read_text()) == \
            edition.sub("", theirs.read_text())

    return {"reader": manifest["pages"],
            "student": [p for p in other["pages"] if not same(p)]}


def read_page(driver, where: str, manifest: dict, page: str) -> tuple[dict, list]:
    """Open a page and check it as a reader sees it; then run axe-core.
    Returns the page's state (ids, links) and axe's violations."""
    state = driver.execute_async_script(PAGE_STATE)
    broken = [alt[:40] for done, width, alt in state["images"] if not (done and width > 0)]
    assert broken == [], f"{where}: images that did not load: {broken}"
    assert state["text"] > 200, f"{where} shows almost no text"
    if page in manifest["math_pages"]:
        assert state["formulas"] > 0 and state["errors"] == 0, (
            f"{where}: {state['formulas']} formulas typeset, {state['errors']} errors")
    assert state["tex"] == [], f"{where}: raw TeX on the page: {state['tex']}"
    if manifest["edition"] == "reader" and page in manifest["lectures"]:
        assert state["closed"] > 0, f"{where}: nothing folded"
    # last: the colour checks take the page out of its layout
    found, samples = driver.execute_async_script(AXE_RUN, COLOUR_RULES)
    severe = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], f"{where}: errors in the browser console: {severe}"
    state["samples"] = samples
    return state, found


def broken_links(folder: Path, links: list[tuple[str, str]],
                 ids: dict[str, set[str]]) -> list[str]:
    """Links inside the site to a page or an anchor that is not there."""
    root = folder.resolve().as_uri() + "/"
    bad = []
    for page, href in links:
        if not href.startswith("file:"):
            continue
        assert href.startswith(root), f"{page} links out of the site: {href}"
        parts = urlsplit(href)
        target = unquote(parts.path)[len(unquote(urlsplit(root).path)):]
        if target not in ids:
            bad.append(f"{page} -> {target} (no such page)")
        # as browsers do: the fragment as written, then percent-decoded
        elif parts.fragment and not {parts.fragment, unquote(parts.fragment)} & ids[target]:
            bad.append(f"{page} -> {target}#{parts.fragment} (no such anchor)")
    return sorted(set(bad))


def test_both_sites_read_offline_typeset_and_pass_axe(browser, sites, tmp_path):  # noqa: F811
    """Every page of both editions: opens with no console error, its links
    and images work, its formulas are typeset, and axe-core finds nothing
    serious or critical."""
    driver = browser
    os.environ["PYTEST_BROWSER_SHOTS"] = str(tmp_path)
    # axe-core goes into every page the browser opens from now on
    driver.execute_cdp_cmd("Page.enable", {})
    script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                    {"source": axe_script()})
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["http://*", "https://*"]})
    driver.set_script_timeout(120)
    driver.get_log("browser")  # drop what earlier pages logged
    reading = pages_to_read(sites)
    assert set(sites["student"][1]["lectures"]) <= set(reading["student"])
    report, serious, start = [], [], time.perf_counter()
    ids: dict[str, dict[str, set[str]]] = {}
    try:
        for edition, (folder, manifest) in sites.items():
            ids[edition], links = {}, []
            for page in reading[edition]:
                where = f"{edition} {page}"
                driver.get((folder / page).as_uri())
                state, found = read_page(driver, where, manifest, page)
                ids[edition][page] = set(state["ids"])
                links += [(page, href) for href in state["links"]]
                report.append(f"{where}: " + (", ".join(f"{v[0]} {v[1]} x{v[2]}" for v in found)
                                              or "no violation")
                              + f" ({state['samples']} colour combinations)")
                serious += [f"{where}: {v[0]} ({v[1]}, {v[2]} nodes, e.g. {v[3]})"
                            for v in found if v[1] in BLOCKED]
            if edition == "reader":
                driver.get((folder / manifest["lectures"][3]).as_uri())
                driver.save_screenshot(str(tmp_path / "reader-lecture.png"))
            # a page left unread is the reader's page, anchors and all
            known = {**ids["reader"], **ids[edition]}
            assert broken_links(folder, links, known) == [], f"{edition}: broken links"
            assert sum(h.startswith("file:") for _, h in links) > 10 * len(reading[edition])
    finally:
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument",
                               {"identifier": script["identifier"]})
    print("axe-core, per page:\n" + "\n".join(report))
    print(f"read and checked in {time.perf_counter() - start:.1f} s")
    assert serious == [], "serious or critical accessibility violations:\n" + "\n".join(serious)
