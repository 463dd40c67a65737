"""Make a student's notebook safe to show in an instructor's browser.

nbgrader's formgrader renders a submission into the page it grades it in:
each markdown cell through nbconvert's Markdown renderer (raw HTML passes
through), each output's `text/html` as it is, an SVG inline. A written answer
holding `<img src=x onerror=...>` or `<script>`, or a code cell that
displays such HTML, would run as the instructor, with the server's API
(marks, files, kernels, terminals) in reach.

`sanitize_notebook` rewrites a notebook so that everything the formgrader
page (and JupyterLab, when the instructor opens the notebook) renders from
it is inert, and leaves the rest alone:

* a markdown or raw cell is rendered exactly as formgrader renders it and
  parsed as a browser parses HTML (html5lib, the one bleach uses); a cell
  whose HTML holds only harmless tags and attributes (what Markdown makes,
  tables, images from `data:` or the submission's own files, links to
  public `http(s)` hosts, `mailto:`, a fragment or the submission's own
  files) is kept as the student wrote it. Any other
  cell is replaced by its rendering cleaned by bleach with the same allow
  list: a tag that is not allowed (`<script>`, `<iframe>`, `<svg>`,
  `<style>`, ...) is shown as text, an attribute that is not (`onerror`,
  `style`, `data-*`, a `javascript:` link, a URL of the server's own, a
  class Markdown does not make) is dropped. The result is checked
  again; if it were still not clean the cell would be replaced by a note.
* an output keeps `text/plain`, `text/latex`, `application/json`, PNG and
  JPEG (when they are base64); its `text/html` and `text/markdown` are kept
  when clean, dropped when there is a `text/plain` to show instead (a
  pandas table then shows as text), and cleaned otherwise; an SVG becomes an
  `<img>` of a `data:` URL (where scripts never run); anything else
  (`application/javascript`, widget views, ...) is removed. Output metadata
  keeps only numeric image sizes.
* the pieces of a cell the templates put into the page unescaped are made
  plain: an `execution_count` that is not a number, an nbgrader `grade_id`
  that is not `[A-Za-z0-9_-]+` (the cell then shows as an ordinary cell),
  notebook-level widget state.

The page is the instructor's in two more ways. A URL in student HTML may
name the submission's own files and other sites, never the server that
shows the page: an `<img src="/logout">` would be fetched with the
instructor's cookies as the page opens (and log them out), a link to
`/hub/...` or `/api/...` would act with their rights when clicked. So an
image loads only from a `data:` URL or a relative path that stays inside
the submission's folder (the formgrader serves it at
`/formgrader/submissions/<id>/<file>`); a link may also go to `mailto:`, a
fragment, or an `http(s)` host with a public name (no IP address, no
`localhost`, no name without a dot, no port), since the gather cannot know
the host the formgrader will be served from. And the page's own styles must
not dress student markup: a class is kept only where Markdown and nbconvert
put it (Pygments' token classes, `anchor-link`, `task-list-item`, ...), so
Bootstrap's `modal-backdrop` or `navbar-fixed-top` cannot lay a layer over
the mark boxes; an `id` only on a heading or a link, never one of the ids
the page uses for its own elements and styles (PAGE_IDS, a graded cell's
`grade_id`, `grade_id-comment`, ...), so a student cannot make a mark box
bind to their own text or borrow a fixed position.
"""
from __future__ import annotations

import base64
import binascii
import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import bleach
import nbformat
from bleach.css_sanitizer import CSSSanitizer

try:  # bleach ships the browser-grade parser it sanitises with
    from bleach._vendor import html5lib
except ImportError:  # pragma: no cover (an unbundled bleach)
    import html5lib

# what Markdown, nbconvert's renderer (code highlighting, heading anchors,
# task lists, tables) and a careful student's own HTML produce
ALLOWED_TAGS = frozenset("""
    a abbr b blockquote br caption code col colgroup dd del details div dl dt
    em figcaption figure h1 h2 h3 h4 h5 h6 hr i img input ins kbd li mark ol p
    pre q s samp small span strong sub summary sup table tbody td tfoot th
    thead tr u ul var wbr
""".split())
GLOBAL_ATTRIBUTES = frozenset({"class", "title", "lang", "dir"})
TAG_ATTRIBUTES = {
    "a": {"href", "id"},
    **{f"h{level}": {"id", "align"} for level in range(1, 7)},  # ids: nbconvert's anchors
    "img": {"src", "alt", "width", "height"},
    "ol": {"start", "type"},
    "li": {"value"},
    "td": {"align", "colspan", "rowspan", "style", "valign"},
    "th": {"align", "colspan", "rowspan", "style", "valign", "scope", "halign"},
    "tr": {"align", "style", "valign"},
    "table": {"border", "align"},
    "col": {"span"},
    "colgroup": {"span"},
    "details": {"open"},
    "input": {"type", "checked", "disabled"},  # Markdown task lists: checkboxes only
    "p": {"align"}, "div": {"align"},
}
# the attributes a browser loads from or links to (only a's href and img's
# src are allowed at all; the rest are listed so that allowing one later
# cannot skip the check of its URL)
URL_ATTRIBUTES = frozenset({"href", "src", "srcset", "action", "formaction", "poster",
                            "background", "xlink:href", "cite", "longdesc", "data",
                            "codebase", "ping", "lowsrc", "dynsrc", "manifest", "icon"})
LINK_SCHEMES = {"http", "https", "mailto"}
DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp|bmp|svg\+xml)[;,]", re.I)
# a host name a student may link to: dotted, letters in its last label (so
# no IPv4 address in any of the forms browsers accept: 127.1, 0x7f.1, 2130706433)
PUBLIC_HOST = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+"
                         r"(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})")
# names that never reach the public internet: the formgrader's own machine
# or a course's private network
LOCAL_SUFFIXES = ("localhost", "local", "internal", "lan", "home.arpa", "intranet")
TEXT_ALIGN = re.compile(r"\s*text-align\s*:\s*(left|right|center|justify)\s*;?\s*", re.I)
NUMBER = re.compile(r"\s*\d{1,5}(\.\d+)?(%|px)?\s*")
GRADE_ID = re.compile(r"[A-Za-z0-9_-]+")
# the classes Markdown and nbconvert put on elements (Pygments' token
# classes on a highlighted code block's spans; pandas' table; the wrapper
# of a cleaned cell), by tag: no other class from a student survives, so
# none of the page's own (Bootstrap's, formgrader's) can style their markup
PYGMENTS_CLASSES = frozenset("""
    bp c c1 ch cm cp cpf cs dl err esc fm g gd ge ges gh gi go gp gr gs gt gu
    hll il k kc kd kn kp kr kt l ld m mb mf mh mi mo n na nb nc nd ne nf ni nl
    nn no nt nv nx o ow p pm s s1 s2 sa sb sc sd se sh si sr ss sx vc vg vi vm
    w x
""".split())
CLASSES = {
    "span": PYGMENTS_CLASSES,
    "div": frozenset({"highlight", "sanitized"}),
    "a": frozenset({"anchor-link"}),
    "li": frozenset({"task-list-item"}),
    "input": frozenset({"task-list-item-checkbox"}),
    "table": frozenset({"dataframe"}),
}
CODE_LANGUAGE = re.compile(r"language-[A-Za-z0-9_+#.-]{1,40}")  # a fenced block's language
# the ids the formgrader page gives its own elements or styles: formgrader's
# (its scripts look them up) and every `#id` of the classic notebook style
# the page inlines (tests/test_safe_notebook.py reads the installed CSS and
# checks this list still holds them all)
PAGE_IDS = frozenset("""
    notebook notebook-container statusmessage toggle_names
    button-select-all current-mode filename find-and-replace fonttest header
    header-container header-spacer help_menu ipython-main-app ipython_notebook
    kernel_indicator kernel_logo_widget login_widget logout maintoolbar menubar
    modal_indicator mode-menu new-menu noscript notebook_panel notebook_toolbar
    notification_area pager pager-button-area pager-container pager-contents
    project_name readonly-indicator replace-preview running select-all site
    tab_content tabs terminado-container texteditor-backdrop
    texteditor-container tree-selector
""".split())
SAFE_OUTPUT_KEYS = {"text/plain", "text/latex", "application/json"}
HTML_KEYS = ("text/html", "text/markdown")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
NOTE = ("*(This cell held content that could not be shown safely; "
        "read the student's original submission.)*")


def reserved_ids(nb) -> set[str]:
    """The ids the formgrader page gives its own elements for `nb`, in lower
    case (a student's id is compared without case: a page shown in quirks
    mode matches ids so)."""
    ids = set(PAGE_IDS)
    for cell in nb.cells:
        grader = cell.get("metadata", {}).get("nbgrader")
        grade_id = grader.get("grade_id") if isinstance(grader, dict) else None
        if isinstance(grade_id, str):
            ids |= {grade_id, f"{grade_id}-comment", f"{grade_id}_extra_credit"}
    return {i.lower() for i in ids}


def browser_url(url: str) -> str:
    """`url` as a browser reads it: ASCII tab and newlines dropped anywhere,
    control characters and spaces dropped around it ("java\tscript:" is
    javascript:), and a backslash read as a slash (as it is in every http(s)
    URL, so `..\\` climbs and `/\\host` names a host)."""
    cleaned = re.sub(r"[\t\n\r]", "", url).strip("".join(map(chr, range(0x21))))
    return cleaned.replace("\\", "/")


def url_scheme(url: str) -> str | None:
    """The scheme a browser would see in `url` (lower case), None if relative."""
    found = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", browser_url(url))
    return found.group(1).lower() if found else None


def own_file(url: str, climb: int = 0) -> bool:
    """Whether `url` is a relative path (no scheme, no leading slash) that
    climbs at most `climb` folders above the one the formgrader page is
    served from, `/formgrader/submissions/<id>/`: 0 keeps it among the
    submission's own files, 1 among formgrader's read-only submission
    pages and files. A `..` counts however it is spelled (`%2e%2e`, `..\\`),
    and so does a `/` the server decodes (`%2f`)."""
    cleaned = browser_url(url)
    path = re.split(r"[?#]", cleaned, maxsplit=1)[0]
    if not path or url_scheme(cleaned) or path.startswith("/"):
        return False
    decoded = unquote(path).replace("\\", "/")
    if decoded.startswith("/"):
        return False
    level = 0
    for segment in decoded.split("/"):  # an empty segment is one, as for a browser
        if segment == "..":
            level -= 1
            if level < -climb:
                return False
        elif segment != ".":
            level += 1
    return True


def public_link(url: str) -> bool:
    """Whether `url` is an http(s) link to a host with a public name on its
    default port: never the formgrader's own machine or network, whatever
    host it is served from."""
    try:
        parts = urlsplit(browser_url(url))
        port = parts.port
    except ValueError:
        return False
    host = parts.hostname or ""
    return (parts.scheme.lower() in ("http", "https") and port is None
            and "@" not in parts.netloc and PUBLIC_HOST.fullmatch(host) is not None
            and not any(host == s or host.endswith("." + s) for s in LOCAL_SUFFIXES))


def url_ok(tag: str, name: str, value: str) -> bool:
    """Whether a browser may load or link to `value` from the formgrader's
    page: an image only from `data:` or the submission's own files; a link
    also to a fragment, `mailto:`, a public http(s) host, or one folder up
    (the pack's own instructions link `../guide/...`: from a submission's
    page that stays among formgrader's read-only submission pages)."""
    if tag == "img" and name == "src":
        return own_file(value) or bool(DATA_IMAGE.match(browser_url(value)))
    if tag == "a" and name == "href":
        cleaned = browser_url(value)
        return (cleaned.startswith("#") or own_file(value, climb=1)
                or url_scheme(value) == "mailto" or public_link(value))
    return False


def attribute_ok(tag: str, name: str, value: str, reserved: frozenset = frozenset()) -> bool:
    """Whether `name="value"` may stay on a `tag` element of student HTML."""
    name = name.lower()
    if name not in GLOBAL_ATTRIBUTES and name not in TAG_ATTRIBUTES.get(tag, ()):
        return False
    if name in URL_ATTRIBUTES:
        return url_ok(tag, name, value)
    if name == "style":
        return bool(TEXT_ALIGN.fullmatch(value))
    if name in ("width", "height", "colspan", "rowspan", "span", "start", "value", "border"):
        return bool(NUMBER.fullmatch(value))
    if name == "id":
        return 0 < len(value) <= 256 and value.lower() not in reserved
    if name == "class":
        allowed = CLASSES.get(tag, frozenset())
        return all(t in allowed or (tag == "code" and CODE_LANGUAGE.fullmatch(t))
                   for t in value.split())
    if tag == "input" and name == "type":
        return value.strip().lower() == "checkbox"
    return True


def html_problems(html: str, reserved: frozenset = frozenset()) -> list[str]:
    """What in `html` is not allowed, parsed as a browser would inside a <div>.

    An empty list means every element, attribute and URL is allowed and the
    markup parsed without an error (no stray end tag that would close one of
    the page's own elements)."""
    parser = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("etree"), namespaceHTMLElements=False)
    root = parser.parseFragment(html, container="div")
    problems = [f"malformed HTML ({code})" for _, code, _ in parser.errors]
    for element in root.iter():
        tag = element.tag
        if not isinstance(tag, str) or element is root:
            continue  # comments and the fragment's own root
        if tag not in ALLOWED_TAGS:
            problems.append(f"<{tag}>")
            continue
        for name, value in element.attrib.items():
            if not attribute_ok(tag, str(name), value, reserved):
                problems.append(f"<{tag} {name}>")
    return problems


def without_style_elements(html: str) -> str:
    """`html` without its <style> elements (pandas puts one before each table:
    CSS for the whole page, not only the table), parsed and written back."""
    root = html5lib.parseFragment(html, container="div", namespaceHTMLElements=False)
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag == "style":
                if child.tail:  # keep the text that followed it
                    index = list(parent).index(child)
                    if index:
                        before = parent[index - 1]
                        before.tail = (before.tail or "") + child.tail
                    else:
                        parent.text = (parent.text or "") + child.tail
                parent.remove(child)
    walker = html5lib.getTreeWalker("etree")
    serializer = html5lib.serializer.HTMLSerializer(quote_attr_values="always",
                                                    omit_optional_tags=False)
    return serializer.render(walker(root))


def _keep_attribute(reserved: frozenset):
    def keep(tag: str, name: str, value: str) -> bool:
        return attribute_ok(tag, name, value, reserved)
    return keep


def clean_html(html: str, reserved: frozenset = frozenset()) -> str:
    """`html` with every tag outside the allow list escaped (shown as text) and
    every attribute outside it dropped."""
    return bleach.clean(html, tags=ALLOWED_TAGS, attributes=_keep_attribute(reserved),
                        protocols=LINK_SCHEMES | {"data"}, strip=False,
                        strip_comments=True,
                        css_sanitizer=CSSSanitizer(allowed_css_properties=["text-align"]))


@lru_cache(maxsize=1)
def _exporter():
    from nbconvert import HTMLExporter

    return HTMLExporter()


def render_markdown(source: str, attachments: dict | None = None) -> str:
    """`source` as formgrader's page shows a markdown cell: nbconvert's
    Markdown filter (with the cell's attachments), then strip_files_prefix."""
    from nbconvert.filters import strip_files_prefix

    context = {"cell": {"attachments": attachments or {}}, "resources": {"metadata": {"path": ""}}}
    return strip_files_prefix(_exporter().markdown2html(context, source))


def _markdown_problems(source: str, reserved: frozenset, attachments: dict | None = None):
    try:
        return tuple(html_problems(render_markdown(source, attachments), reserved))
    except Exception as err:  # noqa: BLE001 (a cell nbconvert cannot render: not shown as is)
        return (f"rendering failed ({type(err).__name__})",)


# every student's copy of an instruction cell is the same text: check it once
markdown_problems = lru_cache(maxsize=8192)(_markdown_problems)


def _html_block(html: str) -> str:
    """Clean HTML as Markdown that renders to exactly that HTML: one HTML
    block with no blank line (a newline is written as `&#10;`, which the
    browser reads back as a newline, in a <pre> too)."""
    return '<div class="sanitized">' + html.replace("\r", "").replace("\n", "&#10;") + "</div>"


def sanitize_markdown_cell(cell, reserved: frozenset) -> str | None:
    """Make one markdown cell safe; what was wrong, or None if it was kept."""
    attachments = cell.get("attachments") or {}
    problems = (markdown_problems(cell.source, reserved) if not attachments
                else _markdown_problems(cell.source, reserved, attachments))
    if not problems:
        return None
    try:
        cleaned = _html_block(clean_html(render_markdown(cell.source, attachments), reserved))
        ok = not html_problems(render_markdown(cleaned), reserved)
    except Exception:  # noqa: BLE001
        ok = False
    cell.source = cleaned if ok else NOTE
    cell.pop("attachments", None)  # images the cell showed are inside the cleaned HTML
    return ", ".join(sorted(set(problems)))


def sanitize_raw_cell(cell, reserved: frozenset) -> str | None:
    problems = html_problems(cell.source, reserved)
    if not problems:
        return None
    cleaned = clean_html(cell.source, reserved)
    cell.source = cleaned if not html_problems(cleaned, reserved) else ""
    return ", ".join(sorted(set(problems)))


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _image_metadata(meta) -> dict:
    """Only numeric sizes and `unconfined` survive: the templates write them
    into an <img> tag unquoted."""
    out = {}
    for mime in ("image/png", "image/jpeg", "image/svg+xml"):
        sizes = meta.get(mime) if isinstance(meta, dict) else None
        if isinstance(sizes, dict):
            kept = {k: v for k, v in sizes.items()
                    if (k in ("width", "height") and isinstance(v, (int, float))
                        and not isinstance(v, bool))
                    or (k == "unconfined" and isinstance(v, bool))}
            if kept:
                out[mime] = kept
    return out


def sanitize_output(output, reserved: frozenset) -> list[str]:
    """Make one output safe in place; what was removed or cleaned."""
    changes = []
    kind = output.get("output_type")
    if kind == "stream":
        output["text"] = _text(output.get("text", ""))
        return changes
    if kind == "error":
        output["ename"] = _text(output.get("ename", ""))
        output["evalue"] = _text(output.get("evalue", ""))
        output["traceback"] = [_text(line) for line in output.get("traceback", [])]
        return changes
    if kind not in ("display_data", "execute_result"):
        return [f"output of type {kind!r}"]
    data = output.get("data", {})
    kept = {}
    for mime, value in data.items():
        text = _text(value)
        if mime in SAFE_OUTPUT_KEYS:
            kept[mime] = value
        elif mime in ("image/png", "image/jpeg"):
            if BASE64.fullmatch(text):
                try:
                    base64.b64decode(re.sub(r"\s", "", text), validate=True)
                    kept[mime] = value
                    continue
                except (binascii.Error, ValueError):
                    pass
            changes.append(f"{mime} that is not base64")
        elif mime == "image/svg+xml":
            if not any(k in data for k in ("image/png", "image/jpeg")):
                encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
                kept["text/html"] = f'<img src="data:image/svg+xml;base64,{encoded}">'
            changes.append("image/svg+xml shown as an image")
        elif mime in HTML_KEYS:
            html = text if mime == "text/html" else render_markdown(text)
            problems = html_problems(html, reserved)
            if not problems:
                kept[mime] = value
            elif mime == "text/html" and set(problems) == {"<style>"} and not html_problems(
                    unstyled := without_style_elements(html), reserved):
                kept[mime] = unstyled  # a pandas table, say
                changes.append("text/html: <style> removed")
            elif "text/plain" in data:
                found = ", ".join(sorted(set(problems)))
                changes.append(f"{mime} ({found}) dropped for text/plain")
            else:
                cleaned = clean_html(html, reserved)
                if not html_problems(cleaned, reserved):
                    kept["text/html"] = cleaned
                changes.append(f"{mime} cleaned ({', '.join(sorted(set(problems)))})")
        else:
            changes.append(f"{mime} removed")
    if not kept:
        kept["text/plain"] = "(output removed: it could not be shown safely)"
    output["data"] = kept
    output["metadata"] = _image_metadata(output.get("metadata", {}))
    return changes


def sanitize_notebook(nb) -> list[str]:
    """Sanitise `nb` in place; one line per cell that was changed."""
    changes = []
    seen_ids: set[str] = set()
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {})
        grader = meta.get("nbgrader")
        if grader is not None:
            grade_id = grader.get("grade_id") if isinstance(grader, dict) else None
            good = (isinstance(grade_id, str) and GRADE_ID.fullmatch(grade_id)
                    and grade_id not in seen_ids)
            if grade_id is not None and not good:
                del meta["nbgrader"]
                changes.append(f"cell {i}: nbgrader metadata with a bad or repeated grade_id "
                               "removed")
            elif grade_id is not None:
                seen_ids.add(grade_id)
    reserved = frozenset(reserved_ids(nb))
    for i, cell in enumerate(nb.cells):
        kind = cell.get("cell_type")
        if kind == "markdown":
            found = sanitize_markdown_cell(cell, reserved)
            if found:
                changes.append(f"cell {i} (markdown): {found}")
        elif kind == "raw":
            found = sanitize_raw_cell(cell, reserved)
            if found:
                changes.append(f"cell {i} (raw): {found}")
        elif kind == "code":
            count = cell.get("execution_count")
            if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
                cell["execution_count"] = None
                changes.append(f"cell {i}: execution_count {count!r} removed")
            for output in cell.get("outputs", []):
                changes += [f"cell {i} (output): {c}" for c in sanitize_output(output, reserved)]
    if "widgets" in nb.metadata:
        del nb.metadata["widgets"]
        changes.append("notebook: widget state removed")
    return changes


def sanitize_file(path: Path) -> list[str]:
    """Sanitise the notebook at `path` in place (rewritten only if changed)."""
    nb = nbformat.read(path, as_version=4)
    changes = sanitize_notebook(nb)
    if changes:
        nbformat.write(nb, path)
    return changes


def sanitize_folder(folder: Path) -> dict[str, list[str]]:
    """Sanitise every notebook under `folder`; {relative path: changes}. A
    notebook that cannot be read or sanitised is deleted: it is not shown."""
    found = {}
    for path in sorted(folder.rglob("*.ipynb")):
        if path.is_file() and not path.is_symlink() and ".ipynb_checkpoints" not in path.parts:
            try:
                changes = sanitize_file(path)
            except Exception as err:  # noqa: BLE001 (fail closed: the file goes)
                path.unlink()
                changes = [f"could not be sanitised ({type(err).__name__}): left out"]
            if changes:
                found[str(path.relative_to(folder))] = changes
    return found


# python autograder/reports/safe_notebook.py FOLDER...: sanitise in place
if __name__ == "__main__":
    import sys

    for target in sys.argv[1:]:
        for name, lines in sanitize_folder(Path(target)).items():
            print(name, *lines, sep="\n  ")
