"""nbgrader's formgrader on a graded class, used as an instructor uses it, in
headless Chromium (Debian's chromium and chromedriver, as tests/test_browser.py).

A class of two hands in the project, both from the blank release (so grading
is quick): `amy_honest` wrote the first memo answer (proj_memo_a);
`zed_hostile` wrote into it an `<img src=x onerror=...>` and a `<script>`,
linked a page of their own (`notes.html`, with a script beside it), and added
a code cell that displays the same HTML, JavaScript and an SVG with a script.
Each of these, if it ran in the instructor's browser, would set
`window.__pwned`, raise an alert and give zed full marks through
formgrader's API.

`course.py grade` grades the class and gathers it; `course.py formgrader`
serves it on a free loopback port. Then, in the browser: "Manage
Assignments" counts two project submissions and lists both students; "Manual
Grading" leads to zed's submission, where nothing ran (no flag, no alert,
no console message, the gradebook unchanged), the student's markup shows as
text, the page's own scripts work, and the same payload injected into the
page by hand is refused by the Content-Security-Policy (while on a page
without that policy it does run); zed's linked page runs nothing either, nor
does a link that smuggles script into the name of an assignment.
zed's answer also holds what acts without a script: an `<img
src="/logout">` (which logged the instructor out as the page opened), an
image of the server's API, and Bootstrap's `modal-backdrop` and a fixed
"Score saved" banner laid over the page. On zed's page no request goes to
either (not even when put into the page by hand: its policy takes images
from zed's folder only), nothing of zed's takes a fixed place, the mark box
is the element at its own centre, and a mark typed there is saved (then
taken back).
Last, amy's answer shows her own image, her code, her table and her maths,
a mark and a comment typed into it are saved, and `course.py sheet` shows
the mark, the total and the band.

Every step saves a screenshot in the test's temporary folder (printed).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pandas as pd
import pytest

# `browser`: the same headless Chromium fixture as the JupyterLab tests
from tests.test_browser import (WAIT, alive, browser, descendants, free_port,  # noqa: F401
                                wait_for, wait_until_gone)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.commands import course  # noqa: E402
from autograder.reports import grade_sheet  # noqa: E402
from autograder.reports import safe_notebook  # noqa: E402

HONEST, HOSTILE = "amy_honest", "zed_hostile"
ANSWER = "proj_memo_a"  # the first written answer of the project (8 points)
HONEST_TEXT = ("Sentence chunks kept each answer whole, so recall rose; fixed windows "
               "cut answers in two and hurt. Overlap helped recall at the cost of more chunks.")
# what an honest answer may hold besides text: an image handed in beside
# the notebook, code, a table and maths (shown as TeX: no MathJax)
HONEST_EXTRAS = """

![recall against chunk size](chart.png)

```python
hits = [rank <= 5 for rank in ranks]
```

| chunking | hit@5 |
|---|---:|
| sentence | 0.71 |

$\\mathrm{recall} = \\frac{|R \\cap G|}{|G|}$
"""
MARK, COMMENT = 6, "Clear on where chunking helped; say what overlap cost."
# what every payload does if it runs: a flag, an alert, and full marks for
# every grade of the submission it is shown in, through formgrader's own API
ATTACK = ("window.__pwned=(window.__pwned||0)+1;alert('pwned');"
          "fetch('/formgrader/api/grades?submission_id='+window.submission_id)"
          ".then(r=>r.json()).then(gs=>gs.forEach(g=>fetch('/formgrader/api/grade/'+g.id,"
          "{method:'PUT',headers:{'X-XSRFToken':(document.cookie.match(/_xsrf=([^;]+)/)||[])[1]},"
          "body:JSON.stringify({manual_score:g.max_score})})))")
IMG = f'<img src=x onerror="{ATTACK}">'
# what acts on the instructor's page without any script: requests with
# their cookies as the page opens, and the page's own classes laid over it
LOGOUT = '<img src="/logout"><img src="/api/kernels">'
OVERLAY = ('<div class="modal-backdrop"></div>'
           '<div class="navbar navbar-fixed-top alert alert-success">Score saved</div>')
HOSTILE_ANSWER = (f"My memo. {IMG}\n\n<script>{ATTACK}</script>\n\n"
                  "[my notes](notes.html) and [more](javascript:window.__pwned=1)\n\n"
                  f"{LOGOUT}\n\n{OVERLAY}")
HOSTILE_CELL = f"""from IPython.display import HTML, SVG, Javascript, display
display(HTML({IMG!r}))
display(Javascript({ATTACK!r}))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20" '
            'onload="window.__pwned=1"><script>window.__pwned=1</script></svg>'))
"""


# ---------------------------------------------------------------- helpers

def api(base: str, token: str, path: str, method: str = "GET", body=None):
    req = urllib.request.Request(f"{base}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
        return json.loads(text) if text else None


def grades_of(gradebook: Path) -> dict:
    """(student, grade id) -> (auto score, manual score, comment) for the project."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        for sub in gb.find_assignment("project").submissions:
            for nb in sub.notebooks:
                comments = {c.name: c.manual_comment for c in nb.comments}
                for g in nb.grades:
                    out[sub.student.id, g.name] = (g.auto_score, g.manual_score,
                                                   comments.get(g.name))
    return out


def shot(driver, shots: Path, name: str) -> Path:
    path = shots / name
    driver.save_screenshot(str(path))
    return path


def console(driver) -> list[str]:
    """What the pages wrote to the console since the last call."""
    return [f'{e["level"]} {e["message"]}' for e in driver.get_log("browser")]


def complaints(messages: list[str]) -> list[str]:
    """Refusals by a Content-Security-Policy and uncaught script errors (a
    missing image, `<img src=x>`, is neither)."""
    return [m for m in messages if "Content Security Policy" in m or "Uncaught" in m]


def no_alert(driver) -> bool:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        driver.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


def click_link(driver, text: str, lands: str, where: str = "body"):
    """Click the visible link reading `text` and wait for a page whose
    address contains `lands`."""
    from selenium.webdriver.common.by import By

    link = wait_for(driver, lambda d: next(
        (a for a in d.find_elements(By.CSS_SELECTOR, f"{where} a") if a.text.strip() == text
         and a.is_displayed()), None), f"a link '{text}'")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", link)
    link.click()
    wait_for(driver, lambda d: lands in d.current_url and d.execute_script(
        "return document.readyState === 'complete';"), f"the page of '{text}' ({lands})")


def show_names(driver) -> None:
    """Press "Show All Names" in a notebook's list of submissions."""
    from selenium.webdriver.common.by import By

    wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "td a.name-hidden")) == 2,
             "two submissions in the notebook's list")
    button = driver.find_element(By.ID, "toggle_names")
    if button.text.strip() == "Show All Names":
        button.click()  # an inline onclick of formgrader's own: allowed by its hash
    wait_for(driver, lambda d: len([a for a in d.find_elements(By.CSS_SELECTOR, "td a.name-shown")
                                    if a.is_displayed()]) == 2, "the students' names shown")


def logouts(driver) -> list:
    """The page's requests to /logout or the server's API, with their status
    (the policy's reports to /api/security/csp-report aside; a request the
    policy refused is listed by Chromium with status 0, and not here)."""
    return driver.execute_script("""
        return performance.getEntriesByType('resource')
          .map(e => [new URL(e.name).pathname, e.responseStatus])
          .filter(([path, status]) => status !== 0 && path !== '/api/security/csp-report'
                  && (path.startsWith('/logout') || path.startsWith('/api/')));""")


def formgrade_ready(driver) -> bool:
    """formgrade.js has run, fetched the marks of every graded cell, and
    finished scrolling to its first input (once MathJax, or the stand-in
    formgrader_csp.py gives it, says it is done)."""
    return driver.execute_script(
        "return !!(window.formgrader && formgrader.loaded && formgrader.grades "
        "&& formgrader.grades.loaded && formgrader.comments.loaded && MathJax.loaded "
        "&& !$('html, body').is(':animated'));")


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("formgrader-shots")
    os.environ["PYTEST_BROWSER_SHOTS"] = str(folder)  # wait_for's timeout screenshots
    print(f"\nscreenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """The class of two, graded by `course.py grade` (the project only)."""
    work = tmp_path_factory.mktemp("formgrader-class")
    release = nbformat.read(ROOT / "release" / "project" / "project.ipynb", as_version=4)
    at = next(i for i, c in enumerate(release.cells)
              if c.metadata.get("nbgrader", {}).get("grade_id") == ANSWER)
    for student, answer in ((HONEST, HONEST_TEXT + HONEST_EXTRAS), (HOSTILE, HOSTILE_ANSWER)):
        nb = nbformat.read(ROOT / "release" / "project" / "project.ipynb", as_version=4)
        nb.cells[at].source = answer
        folder = work / "submitted" / student / "project"
        folder.mkdir(parents=True)
        if student == HONEST:
            from PIL import Image

            Image.new("RGB", (48, 24), "steelblue").save(folder / "chart.png")
        if student == HOSTILE:
            nb.cells.insert(at + 1, nbformat.v4.new_code_cell(HOSTILE_CELL))
            (folder / "notes.html").write_text(
                f"<h1>notes</h1><script>{ATTACK}</script><script src='notes.js'></script>"
                f"{IMG}")
            (folder / "notes.js").write_text(ATTACK)
        nbformat.write(nb, folder / "project.ipynb")
    out = work / "grades"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable,
                           str(ROOT / "autograder" / "commands" / "course.py"), "grade",
                           "--submissions", str(work / "submitted"), "--out", str(out),
                           "--no-report"], capture_output=True, text=True)
    print(f"graded in {time.perf_counter() - start:.0f} s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the gather said what it cleaned, for zed only
    assert f"{HOSTILE}/project:" in proc.stdout and f"{HONEST}/project:" not in proc.stdout, \
        proc.stdout[-3000:]
    return out


@pytest.fixture(scope="module")
def formgrader(graded, tmp_path_factory):
    """`course.py formgrader` on the graded class: (base url, token, log path).
    Shut down through its REST API at the end; nothing it started may stay."""
    run = tmp_path_factory.mktemp("formgrader-run")
    port, token = free_port(), os.urandom(16).hex()
    env = dict(os.environ, JUPYTER_TOKEN=token,  # jupyter_server's own variable
               JUPYTER_CONFIG_DIR=str(run / "config"), JUPYTER_RUNTIME_DIR=str(run / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(run / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(run / "workspaces"), PYTHONUNBUFFERED="1")
    log_path = run / "formgrader.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, str(ROOT / "autograder" / "commands" / "course.py"),
                             "formgrader", "--out", str(graded), "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    started = {proc.pid}
    try:
        deadline = time.monotonic() + WAIT
        while True:
            assert proc.poll() is None, f"formgrader exited:\n{log_path.read_text()[-3000:]}"
            try:
                api(base, token, "/api/status")
                break
            except (urllib.error.URLError, OSError):
                pass
            assert time.monotonic() < deadline, f"no answer:\n{log_path.read_text()[-3000:]}"
            time.sleep(0.3)
        yield base, token, log_path
        started |= descendants(proc.pid)
        api(base, token, "/api/shutdown", method="POST", body={})
        code = proc.wait(timeout=60)
        left = wait_until_gone(started, 20)
        assert code == 0, f"formgrader exited with {code}:\n{log_path.read_text()[-3000:]}"
        assert not left, f"formgrader left processes behind: {sorted(left)}"
    finally:
        started |= descendants(proc.pid) if proc.poll() is None else set()
        for pid in alive(started):  # only ours
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.wait(timeout=10)
        log.close()


# ------------------------------------------------------------------ tests

def test_the_gathered_course_has_nbgraders_layout(graded, tmp_path):
    """Each notebook sits in autograded/<student>/<assignment>/; a course
    gathered by the older, one-folder-too-deep course.py is moved into place
    by the next gather, which keeps the marks a person entered."""
    fg = graded / "formgrader"
    for student in (HONEST, HOSTILE):
        assert (fg / "autograded" / student / "project" / "project.ipynb").is_file()
        assert not (fg / "autograded" / student / "project" / "project").exists()
        assert (fg / "submitted" / student / "project").is_dir()  # formgrader counts these
    assert (fg / "autograded" / HOSTILE / "project" / "notes.html").is_file()

    # the course as the older gather left it: every notebook one folder too
    # deep, not sanitised, and zed no longer among the stored results (so
    # only the migration can put zed's notebook right)
    old = tmp_path / "grades"
    shutil.copytree(graded, old, symlinks=True)
    for student in (HONEST, HOSTILE):
        folder = old / "formgrader" / "autograded" / student / "project"
        shutil.rmtree(folder)
        shutil.copytree(old / "project" / ".students" / student / "autograded" / "project",
                        folder / "project")
    shutil.rmtree(old / "project" / ".students" / HOSTILE)
    raw = nbformat.read(folder / "project" / "project.ipynb", as_version=4)
    assert safe_notebook.sanitize_notebook(raw), "zed's notebook as graded holds the payload"
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{old / 'formgrader' / 'gradebook.db'}") as gb:
        gb.find_grade(ANSWER, "project", "project", HONEST).manual_score = 5
        gb.db.commit()
    course.gather(old, ROOT / "source")  # what the next `course.py grade` does
    fg = old / "formgrader"
    for student in (HONEST, HOSTILE):
        assert (fg / "autograded" / student / "project" / "project.ipynb").is_file()
        assert not (fg / "autograded" / student / "project" / "project").exists()
    moved = nbformat.read(fg / "autograded" / HOSTILE / "project" / "project.ipynb", as_version=4)
    assert safe_notebook.sanitize_notebook(moved) == [], "the moved notebook was not sanitised"
    assert grades_of(fg / "gradebook.db")[HONEST, ANSWER][1] == 5, "a manual mark was lost"


def test_manage_assignments_lists_every_submission(browser, formgrader, shots):
    """/formgrader opens on "Manage Assignments": two project submissions,
    and the submissions page lists both students."""
    from selenium.webdriver.common.by import By

    base, token, _ = formgrader
    driver = browser
    driver.get(f"{base}/formgrader?token={token}")

    def project_row(d):
        for row in d.find_elements(By.CSS_SELECTOR, "table tbody tr"):
            cells = row.find_elements(By.CSS_SELECTOR, "td")
            if cells and cells[0].text.strip() == "project":
                return row
        return None

    # formgrader draws the table more than once while it loads: every read
    # of a row happens inside wait_for, which tries again on a stale one
    count = wait_for(driver, lambda d: (project_row(d) and project_row(d).find_element(
        By.CSS_SELECTOR, ".num-submissions").text.strip()),
        "the project's row in Manage Assignments")
    shot(driver, shots, "1-manage-assignments.png")
    assert count == "2", f"Manage Assignments counts {count!r} project submissions, not 2"

    def open_submissions(d):
        row = project_row(d)
        if row is None:
            return False
        row.find_element(By.CSS_SELECTOR, ".num-submissions a").click()
        return True

    wait_for(driver, open_submissions, "the link to the project's submissions")
    wait_for(driver, lambda d: {HONEST, HOSTILE} <= {
        c.text.strip() for c in d.find_elements(By.CSS_SELECTOR, "td.student-id")},
        "both students in Manage Submissions")
    shot(driver, shots, "2-manage-submissions.png")
    assert complaints(console(driver)) == []
    # its Autograde button would run the student's code in this server, unsandboxed
    with pytest.raises(urllib.error.HTTPError) as refused:
        api(base, token, f"/formgrader/api/submission/project/{HOSTILE}/autograde", "POST", {})
    assert refused.value.code == 403 and "switched off" in refused.value.read().decode()


def test_the_rest_of_the_server_allows_only_its_own_inline_scripts(formgrader):
    """JupyterLab and Notebook pages: a policy without 'unsafe-inline' whose
    hashes cover exactly the inline scripts those pages hold (so they work)."""
    from autograder.reports import formgrader_csp

    base, token, _ = formgrader
    for page in ("/lab", "/tree"):
        req = urllib.request.Request(f"{base}{page}", headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            policy, body = resp.headers["Content-Security-Policy"], resp.read().decode()
        scripts = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
        assert "'unsafe-inline'" not in scripts and "object-src 'none'" in policy, policy
        inline = [b for a, b in formgrader_csp.INLINE_SCRIPT.findall(body)
                  if "application/json" not in a]
        assert inline and all(formgrader_csp.csp_hash(b) in scripts for b in inline), page


def test_nothing_a_hostile_student_wrote_runs_in_the_formgrader(browser, formgrader, graded,
                                                                 shots):
    """Manual Grading -> project -> project -> zed's submission: no script of
    zed's runs, the gradebook is unchanged, formgrader's own scripts work."""
    from selenium.webdriver.common.by import By

    base, token, _ = formgrader
    driver = browser
    before = grades_of(graded / "formgrader" / "gradebook.db")
    assert before[HOSTILE, ANSWER][1] is None

    # control: the payload does run on a page without formgrader's policy
    driver.get("about:blank")
    driver.execute_script("document.body.insertAdjacentHTML('beforeend', arguments[0]);", IMG)
    wait_for(driver, lambda d: not no_alert(d), "the payload's alert on a page without CSP", 10)
    driver.switch_to.alert.accept()
    assert driver.execute_script("return window.__pwned;") == 1
    console(driver)

    driver.get(f"{base}/formgrader?token={token}")
    click_link(driver, "Manual Grading", "/formgrader/gradebook")
    click_link(driver, "project", "/gradebook/project", "table")  # the assignment
    click_link(driver, "project", "/gradebook/project/project", "table")  # its notebook
    show_names(driver)
    shot(driver, shots, "3-manual-grading-list.png")
    click_link(driver, HOSTILE, "/formgrader/submissions/", "table")
    wait_for(driver, formgrade_ready, "formgrader's page for zed, with its marks loaded")
    cell = driver.find_element(By.ID, ANSWER).find_element(
        By.XPATH, "ancestor::div[contains(@class, 'nbgrader_cell')]")
    # the answer with its mark box, below formgrader's fixed bar
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'}); "
                          "window.scrollBy(0, -80);", cell)
    time.sleep(1)  # any onerror or script would have fired by now
    shot(driver, shots, "4-hostile-submission.png")

    assert no_alert(driver), "an alert is open on the formgrader page"
    assert driver.execute_script("return window.__pwned;") is None, "a student's script ran"
    found = driver.execute_script("""
        const all = [...document.querySelectorAll('*')];
        return {
          handlers: all.flatMap(e => [...e.attributes].filter(a => /^on/i.test(a.name))
                                   .map(a => e.tagName + ' ' + a.name + '=' + a.value)),
          scripts_without_nonce: [...document.scripts].filter(s => !s.nonce).length,
          javascript_links: [...document.links].filter(a => /^javascript:/i.test(a.href)).length,
          svg: document.querySelectorAll('svg, iframe, object, embed').length,
        };""")
    assert found["scripts_without_nonce"] == 0 and found["javascript_links"] == 0, found
    assert found["svg"] == 0, found
    assert all("toggle_name(" in h for h in found["handlers"]), found["handlers"]
    assert f"<script>{ATTACK}</script>" in cell.text, "zed's markup is not shown as text"
    assert complaints(console(driver)) == []

    # the policy is a wall of its own: the raw payload put into the page by hand
    driver.execute_script("""
        document.getElementById('notebook-container').insertAdjacentHTML('beforeend', arguments[0]);
        const s = document.createElement('script'); s.textContent = arguments[1];
        document.body.appendChild(s);""", IMG, ATTACK)
    time.sleep(1)
    assert no_alert(driver) and driver.execute_script("return window.__pwned;") is None
    refused = complaints(console(driver))
    assert len(refused) >= 2 and all("Content Security Policy" in m for m in refused), refused

    # zed's own page, linked from the answer, is served without script
    driver.get(f"{base}/formgrader/submissions/"
               f"{driver.execute_script('return submission_id;')}/notes.html")
    wait_for(driver, lambda d: "notes" in d.find_element(By.TAG_NAME, "h1").text, "zed's page")
    time.sleep(0.5)
    assert no_alert(driver) and driver.execute_script("return window.__pwned;") is None
    shot(driver, shots, "5-hostile-linked-page.png")
    console(driver)
    # a link zed could write (a relative one, so the sanitiser keeps it) to a
    # formgrader page that prints the assignment's name from the address into
    # one of its own scripts: the name stays a string
    driver.get(f"{base}/formgrader/manage_submissions/x%22;window.__pwned=1;alert(1);%2F%2F")
    wait_for(driver, lambda d: d.execute_script("return document.readyState === 'complete';"),
             "formgrader's page for an assignment named by the link")
    time.sleep(0.5)
    assert no_alert(driver) and driver.execute_script("return window.__pwned;") is None
    # (escaped as HTML, the quote never closed the string)
    assert driver.execute_script("return assignment_id;") == "x&#34;;window.__pwned=1;alert(1);//"
    console(driver)

    assert grades_of(graded / "formgrader" / "gradebook.db") == before, "a mark changed"


def test_zeds_answer_neither_logs_out_nor_covers_the_marks(browser, formgrader, graded, shots):
    """zed's page, opened with the instructor's session: no request goes to
    /logout or the server's API, nothing of zed's is laid over the page (the
    mark box is the element at its centre), and a mark typed into it is
    saved with that session (then taken back through the API)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, token, log_path = formgrader
    driver = browser
    driver.get(f"{base}/formgrader?token={token}")  # logs in: a cookie from here on
    wait_for(driver, lambda d: d.execute_script("return document.readyState === 'complete';"),
             "formgrader's first page")
    notebooks = api(base, token, "/formgrader/api/submitted_notebooks/project/project")
    zed = next(n["id"] for n in notebooks if n["student"] == HOSTILE)
    driver.get(f"{base}/formgrader/submissions/{zed}/")  # no token: the session only
    wait_for(driver, lambda d: d.execute_script("return document.readyState === 'complete';"),
             "zed's page")
    time.sleep(1)  # any image would have been asked for by now
    assert logouts(driver) == []
    # (after a /logout formgrader's requests for the marks are refused: never ready)
    wait_for(driver, formgrade_ready, "formgrader's page for zed, with its marks loaded")

    score = driver.find_element(By.ID, ANSWER)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", score)
    shot(driver, shots, "7-hostile-marks-uncovered.png")
    cover = driver.execute_script("""
        const box = arguments[0].getBoundingClientRect();
        const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
        const fixed = [...document.querySelectorAll('#notebook-container *')]
            .filter(e => getComputedStyle(e).position === 'fixed').map(e => e.outerHTML);
        return {top_is_box: top === arguments[0], top: top && top.outerHTML.slice(0, 120),
                fixed: fixed};""", score)
    assert cover["top_is_box"] and cover["fixed"] == [], cover
    assert "Score saved" in driver.find_element(By.ID, "notebook-container").text  # as text

    # the page's policy is a wall of its own: images only from zed's folder
    assert complaints(console(driver)) == []
    driver.execute_script("document.getElementById('notebook-container')"
                          ".insertAdjacentHTML('beforeend', arguments[0]);", LOGOUT)
    time.sleep(1)
    refused = complaints(console(driver))
    assert len(refused) == 2 and all("img-src" in m for m in refused), refused
    assert logouts(driver) == []

    # still logged in: a mark typed into zed's box is saved through the session
    gradebook = graded / "formgrader" / "gradebook.db"
    assert grades_of(gradebook)[HOSTILE, ANSWER][1] is None
    score.click()
    score.send_keys(Keys.CONTROL, "a")
    score.send_keys("1")
    score.send_keys(Keys.ESCAPE)  # leaving the box saves it
    wait_for(driver, lambda d: grades_of(gradebook)[HOSTILE, ANSWER][1] == 1,
             "zed's mark in the gradebook")
    assert complaints(console(driver)) == []
    refused = [line for line in log_path.read_text().splitlines()
               if " 403 " in line and "/formgrader/api/grade" in line]
    assert refused == [], refused
    grade = next(g for g in api(base, token, f"/formgrader/api/grades?submission_id={zed}")
                 if g["name"] == ANSWER)
    api(base, token, f"/formgrader/api/grade/{grade['id']}", "PUT", {"manual_score": None})
    assert grades_of(gradebook)[HOSTILE, ANSWER][1] is None


def test_a_mark_typed_in_the_formgrader_reaches_the_grade_sheet(browser, formgrader, graded,
                                                                shots):
    """amy's written answer: type a mark and a comment (formgrader saves a
    box when it changed and is left: a click elsewhere, Tab or Escape), then
    `course.py sheet` shows the mark, the total and the band."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, token, _ = formgrader
    driver = browser
    driver.get(f"{base}/formgrader/gradebook/project/project?token={token}")
    show_names(driver)
    click_link(driver, HONEST, "/formgrader/submissions/", "table")
    wait_for(driver, formgrade_ready, "formgrader's page for amy, with its marks loaded")
    cell = driver.find_element(By.ID, ANSWER).find_element(
        By.XPATH, "ancestor::div[contains(@class, 'nbgrader_cell')]")
    assert HONEST_TEXT[:40] in cell.text
    # her own image loaded from her submission's files; code, table and TeX shown
    shown = driver.execute_script("""
        const cell = arguments[0], img = cell.querySelector('img[src="chart.png"]');
        return {image: img ? [img.complete, img.naturalWidth, img.naturalHeight] : null,
                code: cell.querySelectorAll('.highlight pre span').length,
                table: [...cell.querySelectorAll('td')].map(td => td.textContent)};""", cell)
    assert shown["image"] == [True, 48, 24], shown
    assert shown["code"] > 5 and shown["table"] == ["sentence", "0.71"], shown
    assert "hits = [rank <= 5 for rank in ranks]" in cell.text
    assert "\\mathrm{recall}" in cell.text

    score = driver.find_element(By.ID, ANSWER)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", score)
    score.click()
    score.send_keys(Keys.CONTROL, "a")
    score.send_keys(str(MARK))
    comment = driver.find_element(By.ID, f"{ANSWER}-comment")
    comment.click()  # leaving the mark box saves it
    comment.send_keys(COMMENT)
    comment.send_keys(Keys.ESCAPE)  # formgrader's key to leave (and save) a box
    gradebook = graded / "formgrader" / "gradebook.db"
    wait_for(driver, lambda d: grades_of(gradebook)[HONEST, ANSWER][1:] == (MARK, COMMENT),
             "the mark and the comment in the gradebook")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", score)
    shot(driver, shots, "6-honest-marked.png")
    assert complaints(console(driver)) == []

    proc = subprocess.run([sys.executable,
                           str(ROOT / "autograder" / "commands" / "course.py"), "sheet",
                           "--out", str(graded)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pd.read_csv(graded / "grade_sheet.csv").set_index("student")
    amy = rows.loc[HONEST]
    assert float(amy["project manual"]) == MARK and float(amy["project"]) == MARK
    assert float(amy["total"]) == MARK and float(amy["out of"]) == 100
    assert amy["project band"] == grade_sheet.band(MARK, 100) == "redo"
    assert rows.loc[HOSTILE, "project band"] == grade_sheet.PENDING  # still waits for a person
    assert HONEST in proc.stdout and "redo" in proc.stdout
