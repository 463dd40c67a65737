"""Build the reading edition as a static HTML site (`make site`).

The site holds every notebook of notebooks/ with its outputs and figures
(nbconvert's HTML exporter with the "lab" look, images inside the page), the
three pages of guide/ rendered from Markdown, and an index page listing the
notebooks in lecture order. It mirrors the repository's layout:

    site/index.html
    site/notebooks/NN_name.html     from notebooks/NN_name.ipynb
    site/guide/README.html          from guide/README.md (and glossary, references)

so a relative link such as `../notebooks/04_retrievers.ipynb#...` keeps
working once `.ipynb` and `.md` become `.html`. A link to a page the site does
not have (a notebook that is not written yet, a file of the repository that
is not part of the reading edition) is turned into plain text and listed in
`site/site.json`, which the browser test reads.

Nothing is fetched to read the site: figures are data URIs, the styles are
inline. MathJax is the one script loaded from a CDN; offline, a formula shows
as its TeX source and the rest of the page is unaffected.

The site is generated, never committed (site/ is in .gitignore).

usage: python tools/site.py [--out DIR]      (default: site/ in the repo)
"""
from __future__ import annotations

import argparse
import html
import json
import posixpath
import re
import shutil
import sys
import time
from pathlib import Path

import mistune
import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "tools" / "site" / "templates"
MANIFEST = "site.json"  # also marks a folder as one this script may replace
GUIDE_ORDER = ("README.md", "glossary.md", "references.md")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
ANCHOR = re.compile(r"<a\b([^>]*)>(.*?)</a>", re.S)
HREF = re.compile(r'\bhref="([^"]*)"')

SITE_CSS = """
.site-nav { font-family: system-ui, sans-serif; font-size: 14px;
  display: flex; gap: 1.2em; flex-wrap: wrap; padding: 8px 0;
  margin: 0 0 12px 0; border-bottom: 1px solid #ccc; }
.site-nav + * { margin-top: 0; }
main > .site-nav:last-child { border-bottom: none;
  border-top: 1px solid #ccc; margin: 12px 0 0 0; }
.site-nav a { text-decoration: none; }
.site-missing { border-bottom: 1px dotted #999; cursor: help; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{title}</title>
<style type="text/css">
body {{ font-family: system-ui, sans-serif; line-height: 1.55;
  max-width: 52em; margin: 0 auto; padding: 0 1.2em 3em; color: #222; }}
code, pre {{ font-family: ui-monospace, monospace; font-size: 90%;
  background: #f4f4f4; }}
pre {{ padding: .6em; overflow-x: auto; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: .3em .6em; vertical-align: top;
  text-align: left; }}
th {{ background: #f4f4f4; }}
{css}
</style>
</head>
<body>
<main>
{nav}
{body}
{nav}
</main>
</body>
</html>
"""


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading (the guide's links rely on it)."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


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
    render = mistune.create_markdown(
        renderer=GuideRenderer(),
        plugins=["table", "strikethrough", "url"])
    return render(text)


def first_heading(markdown: str, fallback: str) -> str:
    found = re.search(r"^# (.+)$", markdown, re.M)
    return found.group(1).strip() if found else fallback


def notebook_title(nb: nbformat.NotebookNode, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            return first_heading(cell.source, fallback)
    return fallback


def nav_bar(here: str, prev: tuple[str, str] | None,
            nxt: tuple[str, str] | None) -> str:
    """Links to the index, the guide and the neighbouring notebooks."""
    def link(target: str, label: str) -> str:
        href = posixpath.relpath(target, posixpath.dirname(here) or ".")
        return f'<a href="{href}">{html.escape(label)}</a>'

    parts = [link("index.html", "Course pack"),
             link("guide/README.html", "Reading guide"),
             link("guide/glossary.html", "Glossary"),
             link("guide/references.html", "References")]
    if prev:
        parts.append(link(prev[0], f"← {prev[1]}"))
    if nxt:
        parts.append(link(nxt[0], f"{nxt[1]} →"))
    return '<nav class="site-nav">' + " ".join(parts) + "</nav>"


def rewrite_links(page_html: str, here: str, pages: set[str],
                  unlinked: list[dict]) -> str:
    """Point relative .ipynb/.md links at the site's .html pages.

    `here` is the page's path inside the site (posix). A relative link whose
    target is not a page of the site becomes plain text and is recorded."""
    folder = posixpath.dirname(here)

    def fix(match: re.Match) -> str:
        attrs, text = match.group(1), match.group(2)
        href = HREF.search(attrs)
        if not href:
            return match.group(0)
        url = html.unescape(href.group(1))
        if not url or url.startswith(("#", "/")) or SCHEME.match(url):
            return match.group(0)
        path, _, fragment = url.partition("#")
        stem, dot, ext = path.rpartition(".")
        if dot and ext in ("ipynb", "md"):
            path = f"{stem}.html"
        target = posixpath.normpath(posixpath.join(folder, path))
        if target in pages:
            new = path + (f"#{fragment}" if fragment else "")
            return match.group(0).replace(
                href.group(0), f'href="{html.escape(new)}"', 1)
        unlinked.append({"page": here, "href": url, "text": re.sub(r"<[^>]+>", "", text)})
        return (f'<span class="site-missing" title="not part of this site: '
                f'{html.escape(url)}">{text}</span>')

    return ANCHOR.sub(fix, page_html)


def notebook_pages(notebooks: list[Path]) -> list[tuple[str, str, nbformat.NotebookNode]]:
    """(site path, title, notebook) for every notebook, in lecture order."""
    out = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        out.append((f"notebooks/{path.stem}.html", notebook_title(nb, path.stem), nb))
    return out


def guide_pages(guide: Path) -> list[tuple[str, str, str]]:
    """(site path, title, markdown) for every page of guide/, README first."""
    files = sorted(guide.glob("*.md"),
                   key=lambda p: (GUIDE_ORDER.index(p.name) if p.name in GUIDE_ORDER
                                  else len(GUIDE_ORDER), p.name))
    out = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        out.append((f"guide/{path.stem}.html", first_heading(text, path.stem), text))
    return out


def index_body(notebooks, guides) -> str:
    rows = "\n".join(
        f'<li><a href="{site_path}">{html.escape(title)}</a></li>'
        for site_path, title, _ in notebooks)
    guide_rows = "\n".join(
        f'<li><a href="{site_path}">{html.escape(title)}</a></li>'
        for site_path, title, _ in guides)
    return f"""<h1>Building blocks: retrieval-augmented generation</h1>
<p>The reading edition of the course pack: every notebook executed, with its
outputs and figures, and the reading material that goes with it. Read the
notebooks in this order; each one is a section of the lecture.</p>
<h2>Notebooks</h2>
<ol class="site-notebooks">
{rows}
</ol>
<h2>Reading material</h2>
<ul class="site-guide">
{guide_rows}
</ul>
<p><small>Generated by <code>tools/site.py</code> from <code>notebooks/</code>
and <code>guide/</code>. To work the graded tasks, open the student
notebooks with <code>make lab</code> instead.</small></p>
"""


def trusted_html(element) -> str:
    """nbconvert's clean_html for content of our own: left as it is."""
    return element.decode() if isinstance(element, bytes) else str(element)


def prepare_out(out: Path) -> None:
    """Empty `out` if this script made it; refuse any other non-empty folder."""
    if out.exists():
        if any(out.iterdir()) and not (out / MANIFEST).exists():
            raise SystemExit(f"{out} is not empty and was not made by tools/site.py; "
                             "choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True)


def build(out: Path, notebooks_dir: Path = ROOT / "notebooks",
          guide_dir: Path = ROOT / "guide") -> dict:
    """Write the site to `out` and return its manifest."""
    start = time.perf_counter()
    notebooks = notebook_pages(sorted(notebooks_dir.glob("*.ipynb")))
    if not notebooks:
        raise SystemExit(f"no notebooks in {notebooks_dir}: run `make build` first")
    guides = guide_pages(guide_dir)
    pages = {"index.html"} | {p for p, _, _ in notebooks} | {p for p, _, _ in guides}
    prepare_out(out)
    unlinked: list[dict] = []

    def write(site_path: str, text: str) -> None:
        text = rewrite_links(text, site_path, pages, unlinked)
        target = out / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    # clean_html (bleach) guards against untrusted notebooks and is most of
    # nbconvert's time; these pages come from our own executed masters
    exporter = HTMLExporter(template_name="site",
                            extra_template_basedirs=[str(TEMPLATES)],
                            embed_images=True,
                            filters={"clean_html": trusted_html})
    for i, (site_path, title, nb) in enumerate(notebooks):
        prev = notebooks[i - 1][:2] if i > 0 else None
        nxt = notebooks[i + 1][:2] if i + 1 < len(notebooks) else None
        nb.metadata["title"] = title
        resources = {"site_nav": nav_bar(site_path, prev, nxt), "site_css": SITE_CSS,
                     "metadata": {"name": title}}
        body, _ = exporter.from_notebook_node(nb, resources=resources)
        write(site_path, body)

    for site_path, title, markdown in guides:
        write(site_path, PAGE.format(title=html.escape(title), css=SITE_CSS,
                                     nav=nav_bar(site_path, None, None),
                                     body=markdown_to_html(markdown)))
    write("index.html", PAGE.format(
        title="Building blocks: retrieval-augmented generation",
        css=SITE_CSS, nav=nav_bar("index.html", None, None),
        body=index_body(notebooks, guides)))

    manifest = {
        "pages": sorted(pages),
        "notebooks": [p for p, _, _ in notebooks],
        "unlinked": unlinked,
        "bytes": sum(f.stat().st_size for f in out.rglob("*.html")),
        "seconds": round(time.perf_counter() - start, 1),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "site",
                        help="folder to write the site to (default: site/)")
    args = parser.parse_args(argv)
    manifest = build(args.out.resolve())
    print(f"site: {len(manifest['pages'])} pages, {manifest['bytes'] / 1e6:.1f} MB "
          f"in {manifest['seconds']} s -> {args.out / 'index.html'}")
    if manifest["unlinked"]:
        targets = sorted({u["href"] for u in manifest["unlinked"]})
        print(f"links to pages the site does not have, left as text: {', '.join(targets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
