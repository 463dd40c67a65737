"""The pack as a student and a reader see it, in a real browser.

Headless Chromium (Debian's `chromium` and `chromium-driver`, which `make
test` installs) driven by selenium:

- JupyterLab from the project's environment, on a copy of the student
  release: a task is answered through the cell editor with the master's
  solution, every cell is run from the Run menu, the task's visible test
  passes, the next (blank) task shows its NotImplementedError, nbgrader's
  lab extension is there, and the answer is saved to disk. Then JupyterLab
  is shut down and no process it or the browser started may be left.
- A notebook of the reading edition opened in the same JupyterLab shows
  every figure as a loaded image, and the quiz's self-check edition runs:
  its radio buttons and Check buttons answer right or wrong with a reason
  and keep the count.

The static site of `make site` is read in this module's browser by
tests/test_site.py, which imports the `browser` fixture.

Nothing is downloaded: selenium is pointed at the system's chromedriver and
browser.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL_HINT = ("the browser tests need Debian's chromium and chromedriver: "
                "`make test` installs them when run as root, otherwise "
                "`sudo apt-get install chromium chromium-driver`")
# the notebook answered in JupyterLab: its first task is filled, its second
# stays blank (Run All stops at the first error, so the second is the one seen)
NOTEBOOK = "01_why_retrieval.ipynb"
WAIT = 90  # seconds: the longest any single wait may take on a busy machine


# ---------------------------------------------------------------- helpers

def find_browser() -> tuple[str, str]:
    """(chromium, chromedriver) on PATH; a missing one fails, never skips."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        missing = [n for n, p in (("chromium", browser), ("chromedriver", driver)) if not p]
        pytest.fail(f"{' and '.join(missing)} not found: {INSTALL_HINT}", pytrace=False)
    return browser, driver


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every process, from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces
        fields = stat[stat.rindex(")") + 2:].split()
        table[int(entry.name)] = (int(fields[1]), fields[0])
    return table


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (children, grandchildren, ...)."""
    table = process_table()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, (ppid, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    """The pids of `pids` that still run (zombies count as gone)."""
    table = process_table()
    return {p for p in pids if p in table and table[p][1] != "Z"}


def wait_until_gone(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive(pids)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def lab_options_from_makefile() -> list[str]:
    """The kernel options the Makefile's `lab` target gives JupyterLab."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    line = next(ln for ln in makefile.splitlines() if "jupyter lab" in ln)
    return re.findall(r"--KernelManager\.\S+", line)


def solution_text(master: nbformat.NotebookNode, grade_id: str) -> str:
    """The master's answer for `grade_id`, between the solution markers."""
    cell = next(c for c in master.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    found = re.search(r"^[ \t]*### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?",
                      cell.source, re.S | re.M)
    assert found, f"no solution markers in the master's cell {grade_id}"
    return found.group(1)


def student_answer(release_source: str, solution: str) -> str:
    """The release cell with its placeholder replaced by the solution."""
    placeholder = re.search(r"^[ \t]*# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)\n?",
                            release_source, re.M)
    assert placeholder, "the release cell has no `# YOUR CODE HERE` placeholder"
    return (release_source[:placeholder.start()] + solution
            + release_source[placeholder.end():]).rstrip("\n")


def graded_cells(nb: nbformat.NotebookNode) -> list[tuple[int, str, dict]]:
    return [(i, c.metadata["nbgrader"]["grade_id"], c.metadata["nbgrader"])
            for i, c in enumerate(nb.cells) if "nbgrader" in c.metadata]


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the module; nothing of it may outlive it."""
    browser_path, driver_path = find_browser()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is not installed: run `make test` (it installs "
                    "environment.yml)", pytrace=False)
    profile = tmp_path_factory.mktemp("chromium-profile")
    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1400,1000", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-quic", "--disable-sync", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=driver_path)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(WAIT)
    driver_pid = service.process.pid
    yield driver
    started = descendants(driver_pid) | {driver_pid}
    driver.quit()
    left = wait_until_gone(started, 20)
    for pid in left:  # only our own: these were started by this fixture
        os.kill(pid, signal.SIGKILL)
    assert not left, f"the browser left processes behind after quit: {sorted(left)}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab from .venv on a copy of release/lab and notebooks/.

    Yields (base url, token, work folder, log path). At the end it is shut
    down through its REST API, and every process it started (kernels
    included) must be gone."""
    work = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "release" / "lab", work / "lab")
    shutil.copytree(ROOT / "notebooks", work / "notebooks")
    # settings of this session only: every cell in the DOM (no windowing),
    # no news pop-up; the user's own settings and workspaces stay untouched
    settings = work / ".settings"
    for plugin, values in {
            "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
            "@jupyterlab/apputils-extension/notification": {
                "fetchNews": "false", "checkForUpdates": False}}.items():
        target = settings / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    env = dict(os.environ,
               JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(work / ".workspaces"),
               JUPYTER_RUNTIME_DIR=str(work / ".runtime"),
               JUPYTER_CONFIG_DIR=str(work / ".config"),
               PYTHONUNBUFFERED="1")
    port, token = free_port(), os.urandom(16).hex()
    jupyter = Path(sys.executable).parent / "jupyter"
    cmd = [str(jupyter), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
           *lab_options_from_makefile()]
    if os.getuid() == 0:
        cmd.append("--allow-root")
    with running_jupyterlab(cmd, work, env, work / "jupyterlab.log", port, token) as base:
        yield base, token, work, work / "jupyterlab.log"


@contextmanager
def running_jupyterlab(cmd: list[str], cwd: Path, env: dict, log_path: Path,
                       port: int, token: str):
    """Run `cmd`, a JupyterLab serving on 127.0.0.1:`port` (or a command that
    starts one, such as `make lab`), logging to `log_path`; yield its base
    url once it answers. At the end it is shut down through its REST API,
    and every process it started (kernels included) must be gone."""
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    started: set[int] = {proc.pid}
    try:
        deadline = time.monotonic() + WAIT
        while True:
            assert proc.poll() is None, (
                f"JupyterLab exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                req = urllib.request.Request(f"{base}/api/status",
                                             headers={"Authorization": f"token {token}"})
                with urllib.request.urlopen(req, timeout=5) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            assert time.monotonic() < deadline, (
                f"JupyterLab did not answer in {WAIT} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.3)
        yield base
        started |= descendants(proc.pid)  # the kernels it runs now
        req = urllib.request.Request(f"{base}/api/shutdown", method="POST", data=b"",
                                     headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(req, timeout=30):
            pass
        code = proc.wait(timeout=60)
        left = wait_until_gone(started, 20)
        assert code == 0, f"JupyterLab exited with {code}:\n{log_path.read_text()[-3000:]}"
        assert not left, f"JupyterLab left processes behind: {sorted(left)}"
    finally:
        # after a failure: stop whatever of ours still runs, by pid
        started |= descendants(proc.pid) if proc.poll() is None else set()
        for pid in alive(started):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.wait(timeout=10)
        log.close()


# ------------------------------------------------------------ page helpers

def validate_button(driver, seconds: float = WAIT):
    """nbgrader's Validate button in the open notebook's toolbar, once shown."""
    return wait_for(driver, lambda d: d.execute_script("""
        const bar = document.querySelector(
          '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-toolbar');
        const label = bar && [...bar.querySelectorAll('*')].find(
          n => n.children.length === 0 && n.textContent.trim() === 'Validate');
        return label ? (label.closest('jp-button, button') || label) : null;"""),
        "the Validate button", seconds)


def wait_for(driver, condition, what: str, seconds: float = WAIT):
    """Poll `condition(driver)` until it returns something truthy. An element
    the page re-rendered while the condition read it counts as "not yet"."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait
    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.25,
                             ignored_exceptions=(StaleElementReferenceException,)
                             ).until(condition)
    except TimeoutException:
        shot = Path(os.environ.get("PYTEST_BROWSER_SHOTS", "/tmp")) / "browser-timeout.png"
        driver.save_screenshot(str(shot))
        (shot.parent / "browser-timeout.html").write_text(driver.page_source)
        raise AssertionError(f"timed out after {seconds} s waiting for {what} "
                             f"(screenshot: {shot})") from None


def cell_nodes(driver):
    from selenium.webdriver.common.by import By
    return driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) "
                                                 ".jp-Notebook .jp-Cell")


def open_notebook(driver, base: str, token: str, path: str, n_cells: int):
    """Open `path` in JupyterLab and wait until its cells and kernel are ready."""
    driver.get(f"{base}/lab/tree/{path}?token={token}&reset")
    wait_for(driver, lambda d: len(cell_nodes(d)) == n_cells,
             f"the {n_cells} cells of {path} in the page")
    wait_for(driver, lambda d: d.execute_script(
        "const n = document.querySelector("
        "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');"
        "const bar = document.querySelector('#jp-main-statusbar');"
        "return n && n.getAttribute('data-status') === 'idle' &&"
        " bar && /\\| Idle/.test(bar.textContent);"),
        f"an idle kernel for {path} (toolbar and status bar)")


def outputs_of(cell) -> dict:
    """Prompt and outputs of one code cell as the page shows them."""
    return cell.parent.execute_script("""
        const cell = arguments[0];
        const prompt = cell.querySelector('.jp-InputPrompt');
        const outs = [...cell.querySelectorAll('.jp-OutputArea-output')];
        return {
          prompt: prompt ? prompt.textContent.trim() : '',
          errors: outs.filter(o => o.getAttribute('data-mime-type') ===
                              'application/vnd.jupyter.stderr')
                      .map(o => o.textContent),
          text: outs.map(o => o.textContent).join('\\n'),
        };""", cell)


# ------------------------------------------------------------------ tests

def test_a_student_answers_a_task_in_jupyterlab(browser, lab, tmp_path):
    """Answer Part A through the editor, run all: A passes, B says blank."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, token, work, _ = lab
    driver = browser
    os.environ["PYTEST_BROWSER_SHOTS"] = str(tmp_path)
    release = nbformat.read(work / "lab" / NOTEBOOK, as_version=4)
    master = nbformat.read(ROOT / "source" / "lab" / NOTEBOOK, as_version=4)
    solutions = [(i, gid) for i, gid, meta in graded_cells(release) if meta.get("solution")]
    assert len(solutions) >= 2, f"{NOTEBOOK} needs two tasks for this test"
    (answer_at, answer_id), (blank_at, blank_id) = solutions[:2]
    # the visible test cell of the answered task: the first graded test after it
    test_at, test_id = next((i, gid) for i, gid, meta in graded_cells(release)
                            if i > answer_at and meta.get("grade") and not meta.get("solution"))
    assert test_at < blank_at, f"{test_id} should come before the next task {blank_id}"
    answer = student_answer(release.cells[answer_at].source, solution_text(master, answer_id))

    open_notebook(driver, base, token, f"lab/{NOTEBOOK}", len(release.cells))
    driver.save_screenshot(str(tmp_path / "1-release-opened.png"))

    # nbgrader's lab extension: its Validate button sits in the notebook toolbar
    wait_for(driver, lambda d: d.execute_script(
        "return [...document.querySelectorAll('.jp-NotebookPanel-toolbar *')]"
        ".some(n => n.textContent.trim() === 'Validate');"),
        "nbgrader's Validate button in the notebook toolbar")
    menus = [m.text for m in driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-itemLabel")]
    assert "Nbgrader" in menus, f"no Nbgrader menu in the menu bar; menus: {menus}"

    # type the answer: click into the cell's editor, select all, paste
    cell = cell_nodes(driver)[answer_at]
    editor = cell.find_element(By.CSS_SELECTOR, ".cm-content")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", cell)
    editor.click()
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).perform()
    driver.execute_script("""
        const data = new DataTransfer();
        data.setData('text/plain', arguments[1]);
        arguments[0].dispatchEvent(new ClipboardEvent('paste', {
          clipboardData: data, bubbles: true, cancelable: true}));""", editor, answer)

    def typed(_):
        return "\n".join(line.text for line in
                         cell.find_elements(By.CSS_SELECTOR, ".cm-line"))

    wait_for(driver, lambda d: typed(d).replace("\u200b", "") == answer,
             f"the answer to {answer_id} in the cell editor")
    driver.save_screenshot(str(tmp_path / "2-answer-typed.png"))

    # run every cell from the Run menu, as a student would
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    run_menu = next(m for m in driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
                    if m.text == "Run")
    run_menu.click()

    def run_all_item(d):
        return next((m for m in d.find_elements(By.CSS_SELECTOR, ".lm-Menu-item")
                     if m.text.startswith("Run All Cells")), None)

    wait_for(driver, run_all_item, "Run All Cells in the Run menu").click()

    # the blank task defines a function that raises when called: the first
    # error of the run is its demo's NotImplementedError, before its tests
    blank_test_at = next(i for i, _, meta in graded_cells(release)
                         if i > blank_at and meta.get("grade") and not meta.get("solution"))

    def first_error(d):
        for i, node in enumerate(cell_nodes(d)):
            if i > answer_at and node.get_attribute("class").count("jp-CodeCell"):
                got = outputs_of(node)
                if got["errors"]:
                    return i, "".join(got["errors"])
        return None

    where, error = wait_for(driver, first_error, "the first error of Run All")
    assert blank_at < where <= blank_test_at and "NotImplementedError" in error, (
        f"expected the blank task {blank_id} (cell {blank_at}) to raise "
        f"NotImplementedError by cell {blank_test_at}; cell {where} says:\n{error[-1500:]}")
    blank = cell_nodes(driver)[where]
    test_cell = cell_nodes(driver)[test_at]
    result = outputs_of(test_cell)
    assert re.fullmatch(r"\[\d+\]:", result["prompt"]), (
        f"the visible test {test_id} did not run: its prompt is {result['prompt']!r}")
    assert result["errors"] == [], (
        f"the visible test {test_id} failed with the master's answer:\n{result['errors']}")
    for i, _, meta in graded_cells(release):
        if i < blank_at and not meta.get("solution") and meta.get("grade"):
            got = outputs_of(cell_nodes(driver)[i])
            assert got["errors"] == [], f"test cell {i} before the blank task failed: {got}"
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", test_cell)
    driver.save_screenshot(str(tmp_path / "3-visible-test-passed.png"))
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", blank)
    driver.save_screenshot(str(tmp_path / "4-blank-task-error.png"))

    # save with Ctrl+S: the answer reaches the file on disk
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()

    def saved(_):
        try:
            nb = nbformat.read(work / "lab" / NOTEBOOK, as_version=4)
        except Exception:  # half-written while JupyterLab saves
            return False
        return nb.cells[answer_at].source == answer

    wait_for(driver, saved, f"the answer to {answer_id} saved in {NOTEBOOK}")


def test_reading_edition_figures_render_in_jupyterlab(browser, lab, tmp_path):
    """Every figure stored in a reading-edition notebook shows as an image."""
    base, token, work, _ = lab
    driver = browser
    os.environ["PYTEST_BROWSER_SHOTS"] = str(tmp_path)
    nb = nbformat.read(work / "notebooks" / NOTEBOOK, as_version=4)
    n_images = sum(1 for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    assert n_images >= 1, f"notebooks/{NOTEBOOK} holds no figure to look at"
    open_notebook(driver, base, token, f"notebooks/{NOTEBOOK}", len(nb.cells))

    def state(d):
        return d.execute_script("""
            const imgs = [...document.querySelectorAll(
              '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedImage img')];
            return imgs.map(i => [i.complete, i.naturalWidth]);""")

    wait_for(driver, lambda d: len(state(d)) == n_images and all(
        done and width > 0 for done, width in state(d)),
        f"{n_images} loaded figures in notebooks/{NOTEBOOK}")
    first = driver.find_element("css selector", ".jp-NotebookPanel:not(.lm-mod-hidden) "
                                                ".jp-RenderedImage img")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", first)
    driver.save_screenshot(str(tmp_path / "reading-edition-figure.png"))


def test_the_practice_quiz_works_in_jupyterlab(browser, lab, tmp_path):
    """The reading edition's practice quiz, run in JupyterLab: pick an
    option, press Check, read right or wrong with its reason, and watch the
    count."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, token, work, _ = lab
    driver = browser
    os.environ["PYTEST_BROWSER_SHOTS"] = str(tmp_path)
    from ragkit.quiz_practice import QUESTIONS

    name = "quiz_practice.ipynb"
    nb = nbformat.read(work / "notebooks" / name, as_version=4)
    asked = [c for c in nb.cells if c.cell_type == "code" and "quiz.ask_item(" in c.source]
    assert len(asked) == len(QUESTIONS) == 10, "one cell per practice question"
    first, second = QUESTIONS[0].right, QUESTIONS[1].right
    wrong = next(x for x in "ABCD" if x != second)
    open_notebook(driver, base, token, f"notebooks/{name}", len(nb.cells))
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    next(m for m in driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
         if m.text == "Run").click()
    wait_for(driver, lambda d: next((m for m in d.find_elements(By.CSS_SELECTOR, ".lm-Menu-item")
                                     if m.text.startswith("Run All Cells")), None),
             "Run All Cells in the Run menu").click()

    def boxes(d):
        found = d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) "
                                                 ".widget-radio-box")
        return found if len(found) == 10 else None

    wait_for(driver, boxes, "ten questions drawn as radio buttons")
    checks = [b for b in driver.find_elements(By.CSS_SELECTOR, "button.jupyter-button")
              if b.text.strip() == "Check"]
    assert len(checks) == 10, f"expected ten Check buttons, found {len(checks)}"

    def answer(index: int, letter: str) -> None:
        box = boxes(driver)[index]
        label = next(lb for lb in box.find_elements(By.CSS_SELECTOR, "label")
                     if lb.text.strip() == letter)
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", label)
        label.click()
        checks[index].click()

    def page_says(text: str):
        return lambda d: text in d.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel:not("
                                                ".lm-mod-hidden)").text

    answer(0, first)
    wait_for(driver, page_says("1 of 10 right, 1 answered"), "the count after a right answer")
    wait_for(driver, page_says("Right:"), "the reason shown for a right answer")
    answer(1, wrong)
    wait_for(driver, page_says("1 of 10 right, 2 answered"), "the count after a wrong answer")
    wait_for(driver, page_says("Not quite:"), "the reason shown for a wrong answer")
    answer(1, second)  # trying again replaces the earlier result
    wait_for(driver, page_says("2 of 10 right, 2 answered"), "the count after a second try")
    driver.save_screenshot(str(tmp_path / "quiz-practice.png"))


# ------------------------------------------------ the student's JupyterLab

# what a student uses of nbgrader in JupyterLab: its Validate button
STUDENT_NBGRADER = {"@jupyter/nbgrader:validate-assignment"}
LOG_PROBLEM = re.compile(r"^\[[WEC] |\| (WARNING|ERROR|CRITICAL)\]|Traceback", re.M)
# jupyter_server's one harmless warning: a folder listing that read the name
# of a save's temporary file (`.~quiz.ipynb`, atomic writing) just before the
# save renamed it (filemanager.py, `_dir_model`); seen once in many runs
SAVE_RACE = re.compile(r"^\[W [^]]*\] \S*/\.~[^/\s]+ doesn't exist$")


@pytest.fixture(scope="module")
def student_lab(tmp_path_factory):
    """JupyterLab as the student bundle opens it: the bundle's files
    (tools/build_bundle.py) written out as unzipped, a .venv whose
    jupyter and python are this environment's, and the bundle's own `make lab`, which
    copies release/ to my-work/ and points JUPYTER_CONFIG_DIR at the
    bundle's jupyter-config/. Yields (base url, token, bundle, log path)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import build_bundle

    folder = tmp_path_factory.mktemp("student") / "rag-course-student"
    for name, data in build_bundle.collect(ROOT).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, target in (("jupyter", Path(sys.executable).parent / "jupyter"),
                         ("python", Path(sys.executable))):  # make lab copies with python
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{target}" "$@"\n')
        (bin_dir / name).chmod(0o755)
    (folder / ".venv" / ".installed").touch()  # set up: make installs nothing
    home = folder.parent / "home"  # an empty home, as a new student's
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "IPYTHON"))}
    env.update(HOME=str(home), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTER_DATA_DIR=str(home / "data"), PYTHONUNBUFFERED="1")
    port, token = free_port(), os.urandom(16).hex()
    options = (f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
               f"--ServerApp.port_retries=0 --IdentityProvider.token={token} "
               "--LabApp.expose_app_in_browser=True")
    cmd = ["make", "--no-print-directory", "lab", f"LAB_ARGS={options}"]
    log_path = folder.parent / "jupyterlab.log"
    with running_jupyterlab(cmd, folder, env, log_path, port, token) as base:
        yield base, token, folder, log_path


def test_the_student_jupyterlab_offers_validate_and_no_instructor_tool(
        browser, student_lab, tmp_path):
    """No Nbgrader menu of instructor tools (formgrader, create assignment,
    course list, assignment list), no news pop-up; the Validate button is
    there and works; the server log holds no warning, after Validate too."""
    from selenium.webdriver.common.by import By

    base, token, folder, log_path = student_lab
    driver = browser
    os.environ["PYTEST_BROWSER_SHOTS"] = str(tmp_path)
    quiz = nbformat.read(folder / "my-work" / "quiz" / "quiz.ipynb", as_version=4)
    open_notebook(driver, base, token, "quiz/quiz.ipynb", len(quiz.cells))
    menus = [m.text for m in driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-itemLabel")]
    app = driver.execute_script("""
        const app = window.jupyterapp;
        const config = JSON.parse(
          document.getElementById('jupyter-config-data').textContent);
        return {
          plugins: app.listPlugins().filter(p => p.startsWith('@jupyter/nbgrader')),
          active: app.listPlugins().filter(p => app.isPluginActivated(p)),
          commands: app.commands.listCommands().filter(c => c.startsWith('nbgrader')),
          news: app.hasPlugin('@jupyterlab/apputils-extension:announcements'),
          disabled: config.disabledExtensions,
          nbgraderMenu: [...document.querySelectorAll('#jp-mainmenu-nbgrader .lm-Menu-item')]
            .map(n => n.textContent.trim()),
        };""")
    print(f"student JupyterLab: menus {menus}; nbgrader plugins {app['plugins']}; "
          f"nbgrader commands {app['commands']}")
    assert "Nbgrader" not in menus and app["nbgraderMenu"] == [], (
        f"an Nbgrader menu of instructor tools: {menus}, {app['nbgraderMenu']}")
    assert set(app["plugins"]) == STUDENT_NBGRADER, app["plugins"]
    assert STUDENT_NBGRADER <= set(app["active"])
    assert app["commands"] == [], f"nbgrader commands left: {app['commands']}"
    assert not app["news"] and "@jupyterlab/apputils-extension:announcements" in app["disabled"]
    assert not driver.find_elements(By.CSS_SELECTOR, ".jp-toast-message"), (
        "a notification pop-up: " + " / ".join(
            n.text for n in driver.find_elements(By.CSS_SELECTOR, ".jp-toast-message")))
    # what a student uses: Validate, in the notebook's toolbar
    button = validate_button(driver)
    button.click()
    dialog = wait_for(driver, lambda d: next((
        n for n in d.find_elements(By.CSS_SELECTOR, ".jp-Dialog-content")
        if "Validat" in n.text), None), "nbgrader's validation dialog")
    driver.save_screenshot(str(tmp_path / "student-validate.png"))
    text = dialog.text
    # the blank quiz: every check fails, the first one on q1
    assert "The following cell failed" in text and "letter(q1, 1)" in text, text[:1500]
    assert "Cannot validate" not in text and "Version Mismatch" not in text, text[:1500]
    log = log_path.read_text()
    assert "Validating" in log, "the server never validated"
    problems = [line for line in log.splitlines()
                if LOG_PROBLEM.search(line) and not SAVE_RACE.match(line)]
    assert problems == [], "the server log holds warnings:\n" + "\n".join(problems)
