"""A Jupyter server extension: formgrader's pages run only formgrader's scripts.

`course.py formgrader` loads it (see formgrader_server_config.py). The
notebooks of the gathered course are sanitised already (safe_notebook.py);
this is the second wall, in the browser: every page of nbgrader's formgrader
is sent with a Content-Security-Policy whose `script-src` allows only

* `<script>` elements carrying this response's nonce, a fresh random value
  per response. The nonce is written into nbgrader's own templates (its
  `formgrader/templates/`) as they are loaded, never into what a template
  prints from a notebook, so no markup from a submission can carry it;
* the few inline event handlers formgrader's templates hold
  (`onclick="toggle_name(true);"`, `onclick="toggleAllNames()"`, ...), read
  from the installed templates and allowed by hash ('unsafe-hashes').

Not even a script from the server itself runs without the nonce, so a
script file handed in with a submission cannot be loaded either.

So an `<img onerror=...>`, a `<script>`, a `javascript:` link or an SVG's
script does not run on a formgrader page even if it got past the sanitiser.
A submission's page loads images only from `data:` and that submission's
own folder (`/formgrader/submissions/<id>/`), so an `<img src="/logout">`
that got past it is not requested either. Nothing is loaded from
another host: the formgrade page's MathJax (from a CDN) is left out (a
stand-in tells formgrade.js it is done), so TeX in a submission shows as its
source.

Two more things a submission could reach through the formgrader are closed:
the files of a submission (`/formgrader/submissions/<id>/<file>`, an HTML
or SVG file handed in, say) are served sandboxed, with no script at all; and
formgrader's "autograde" button, which would run the student's code in the
instructor's server, outside grade.py's sandbox, answers with an error
(grade with `course.py grade`).

server_policy() is the policy every other page of the server gets, through
`ServerApp.tornado_settings["headers"]` (formgrader_server_config.py).
"""
from __future__ import annotations

import base64
import contextvars
import hashlib
import json
import re
import secrets
from pathlib import Path

from jinja2 import BaseLoader, Environment, FileSystemLoader

# the nonce of the response being rendered (set by the handler, read by the templates)
_NONCE: contextvars.ContextVar[str] = contextvars.ContextVar("formgrader_csp_nonce", default="")
SCRIPT_TAG = re.compile(r"<script(?=[\s>])", re.I)
INLINE_HANDLER = re.compile(r"""\son[a-z]+\s*=\s*"([^"{}]*)\"""", re.I)
HOST = re.compile(r"[A-Za-z0-9.-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")
URL_PATH = re.compile(r"/[A-Za-z0-9._~%/-]*")  # nothing that ends a CSP source
# MathJax is not loaded from its CDN: formgrader's pages run no script from
# another host. formgrade.js waits for MathJax's "End" signal before it puts
# the cursor in the first mark box, so a stand-in sends it.
NO_MATHJAX = """{%- macro mathjax(url='') -%}
<!-- no MathJax on formgrader pages (no script from another host): TeX shows as source -->
<script nonce="{{ csp_nonce() }}">
window.MathJax = {Hub: {Queue: function () {}, Startup: {signal: {Interest: function (listen) {
  window.setTimeout(function () { listen("End"); }, 0); }}}}};
</script>
{%- endmacro %}"""

# every page but formgrader's (JupyterLab, Notebook, the login page): their
# bundles from the server, eval (JupyterLab compiles the JSON schemas of its
# settings), and of inline script only the few fixed snippets of their page
# templates (which take the token out of the address bar), by hash. They
# render notebooks with their own sanitiser.
SERVER_DIRECTIVES = [
    "default-src 'self'",
    "script-src 'self' 'unsafe-eval' {hashes}",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", re.S | re.I)
# a file of a submission, served by formgrader: an image or text, never a page that runs
FILES_POLICY = "; ".join([
    "default-src 'none'",
    "img-src 'self' data:",
    "style-src 'unsafe-inline'",
    "sandbox",
    "frame-ancestors 'self'",
])


def csp_hash(text: str) -> str:
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def page_templates() -> list[Path]:
    """The HTML page templates of JupyterLab, Notebook and jupyter_server."""
    import jupyter_server

    folders = [Path(jupyter_server.__file__).parent / "templates"]
    try:
        from jupyterlab.commands import get_app_dir

        folders.append(Path(get_app_dir()) / "static")
    except ImportError:  # pragma: no cover
        pass
    try:
        import notebook

        folders.append(Path(notebook.__file__).parent / "templates")
    except ImportError:  # pragma: no cover
        pass
    return [p for folder in folders if folder.is_dir() for p in sorted(folder.glob("*.html"))]


def server_policy() -> str:
    """SERVER_DIRECTIVES with the hashes of the fixed inline scripts of the
    installed page templates (a script holding template code is not allowed)."""
    found = set()
    for path in page_templates():
        for attributes, body in INLINE_SCRIPT.findall(path.read_text(encoding="utf-8")):
            if "application/json" not in attributes and "{{" not in body and "{%" not in body:
                found.add(csp_hash(body))
    return "; ".join(SERVER_DIRECTIVES).format(hashes=" ".join(sorted(found)))


def template_dir() -> Path:
    from nbgrader.server_extensions.formgrader import handlers

    return Path(handlers.template_path).resolve()


def inline_handlers() -> list[str]:
    """The inline event handlers (`onclick="..."`) of formgrader's templates,
    read from the installed nbgrader: only literal ones, no template code."""
    found = set()
    for path in sorted(template_dir().rglob("*")):
        if path.suffix in (".tpl", ".j2") and path.is_file():
            found |= set(INLINE_HANDLER.findall(path.read_text(encoding="utf-8")))
    return sorted(found)


def formgrader_policy(nonce: str, handlers: list[str], report_uri: str,
                      images: str = "'self'") -> str:
    """The policy of one formgrader page: only its own nonce'd scripts run,
    images come from `images` (a source list) and `data:` URLs."""
    scripts = " ".join([f"'nonce-{nonce}'", *(["'unsafe-hashes'"] if handlers else []),
                        *map(csp_hash, handlers)])
    return "; ".join([
        "default-src 'none'",
        f"script-src {scripts}",
        "style-src 'self' 'unsafe-inline'",
        f"img-src {images} data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'self'",
        f"report-uri {report_uri}",
    ])


def submission_images(protocol: str, host: str, path: str) -> str:
    """The image source of a submission's page at `path`: the submission's
    own folder on this host (a CSP source ending in `/` matches every URL
    under it), so that not even an `<img src="/logout">` the sanitiser
    missed is requested with the instructor's cookies. 'self' if the Host
    header is not a plain host name (the page then works as before)."""
    folder = path if path.endswith("/") else path + "/"
    if (protocol not in ("http", "https") or not HOST.fullmatch(host)
            or not URL_PATH.fullmatch(folder)):
        return "'self'"
    return f"{protocol}://{host}{folder}"


def current_nonce() -> str:
    """The templates' `csp_nonce()`: the nonce of the response being rendered."""
    return _NONCE.get()


class NonceLoader(BaseLoader):
    """A Jinja loader around another: a template of formgrader's own folder
    gets `nonce="{{ csp_nonce() }}"` in each <script> tag; any other template
    is left as it is (nbconvert's, which print a notebook's outputs, among
    them); `mathjax.html.j2` becomes NO_MATHJAX, which loads nothing."""

    def __init__(self, inner: BaseLoader, own: Path):
        self.inner, self.own = inner, own

    def get_source(self, environment, template):
        if template.rsplit("/", 1)[-1] == "mathjax.html.j2":
            return NO_MATHJAX, None, lambda: True
        source, filename, uptodate = self.inner.get_source(environment, template)
        if filename and Path(filename).resolve().is_relative_to(self.own):
            source = SCRIPT_TAG.sub('<script nonce="{{ csp_nonce() }}"', source)
        return source, filename, uptodate

    def list_templates(self):
        return self.inner.list_templates()


def nonce_environment(loader: BaseLoader) -> Environment:
    """The environment of formgrader's own pages (its `.tpl` templates).

    Autoescaped, unlike nbgrader's: those pages print names taken from the
    address into a script (`var assignment_id = "{{ assignment_id }}";`), so
    a link such as `/formgrader/manage_submissions/x";alert(1);//`, which a
    student could put in an answer, would otherwise run inside a script that
    carries the nonce. Escaped, the quote stays inside the string; the ids
    themselves (letters, digits, `_.-`) print unchanged."""
    env = Environment(loader=NonceLoader(loader, template_dir()), autoescape=True)
    env.globals["csp_nonce"] = current_nonce
    return env


def nonce_exporter_class():
    from nbconvert.exporters import HTMLExporter

    class NonceHTMLExporter(HTMLExporter):
        """formgrader's exporter, with nonces in formgrader's template."""

        def _create_environment(self):
            env = super()._create_environment()
            env.loader = NonceLoader(env.loader, template_dir())
            env.globals["csp_nonce"] = current_nonce
            return env

    return NonceHTMLExporter


def _patch_formgrader(serverapp) -> None:
    from jupyter_server.utils import url_path_join
    from nbgrader.server_extensions.formgrader import apihandlers, base, handlers

    if getattr(base.BaseHandler, "_rag_csp", False):
        return
    onclick = inline_handlers()
    pages = nonce_environment(FileSystemLoader([str(template_dir())]))
    exporter_class = nonce_exporter_class()

    def csp_nonce(self) -> str:
        if not getattr(self, "_rag_csp_nonce", None):
            self._rag_csp_nonce = secrets.token_urlsafe(18)
        return self._rag_csp_nonce

    def content_security_policy(self, images: str = "'self'") -> str:
        report = self.settings.get("csp_report_uri",
                                   url_path_join(self.settings.get("base_url", "/"),
                                                 "api/security/csp-report"))
        return formgrader_policy(self.csp_nonce, onclick, report, images)

    def submission_policy(self) -> str:  # a submission's page: its own images only
        return content_security_policy(self, submission_images(
            self.request.protocol, self.request.host, self.request.path))

    def render(self, name, **ns):
        _NONCE.set(self.csp_nonce)
        return pages.get_template(name).render(**ns)

    def exporter(self):
        made = self.settings.get("rag_csp_exporter")
        if made is None:
            made = exporter_class(config=self.settings["nbgrader_exporter"].config)
            self.settings["rag_csp_exporter"] = made
        _NONCE.set(self.csp_nonce)
        return made

    def refuse_autograde(self, assignment_id, student_id):
        self.set_status(403)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({
            "success": False,
            "error": ("autograding from the formgrader is switched off: it would run "
                      "the student's code in this server, outside grade.py's sandbox. "
                      "Grade again with `course.py grade`."),
            "log": ""}))

    base.BaseHandler.csp_nonce = property(csp_nonce)
    base.BaseHandler.content_security_policy = property(content_security_policy)
    base.BaseHandler.render = render
    base.BaseHandler.exporter = property(exporter)
    handlers.SubmissionHandler.content_security_policy = property(submission_policy)
    handlers.SubmissionFilesHandler.content_security_policy = property(lambda self: FILES_POLICY)
    apihandlers.AutogradeHandler.post = refuse_autograde
    base.BaseHandler._rag_csp = True
    serverapp.log.info("formgrader_csp: formgrader pages run only their own scripts "
                       "(nonce per response, %d inline handlers by hash)", len(onclick))


def _jupyter_server_extension_points():
    return [{"module": "formgrader_csp"}]


def _load_jupyter_server_extension(serverapp) -> None:
    _patch_formgrader(serverapp)
