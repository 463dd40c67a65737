"""The course on a real JupyterHub, end to end (hub/, make hub; issue 31).

One hub per module, started the way `make hub` starts it (hub/hubctl.py's
checks and fixes, then `jupyterhub -f hub/jupyterhub_config.py`), on a free
loopback port, with the real configurable-http-proxy from .venv/node, the
hub's runtime under /opt/rag-course-hub, PAM logins of throwaway Linux
accounts (unique names, removed with their homes afterwards, also after a
failure) and an nbgrader exchange of its own in a temporary folder.

The tests run in order, one course term:

1. a student logs in in headless Chromium, opens the Assignments panel
   from the Nbgrader menu (which offers nothing else), fetches the quiz,
   answers it, presses Validate and submits;
2. a second student fetches and submits from the shell, later; neither
   can read the other's files, the exchange's inbound or the masters;
3. the instructor collects and grades the quiz with the pack's grader,
   under a late policy whose due date falls between the two submissions:
   the second student loses the policy's penalty, the first nothing;
4. formgrader answers 403 to the student and lets the grader account
   mark an answer, which the grade sheet then shows;
5. feedback is released, and the student fetches it in the Assignments
   panel and opens it;
6. on a machine the class shares (issue 54), hostile accounts beside
   honest ones: a submission handed in as a class-mate, dated in the
   future, dated back after the due date, rewritten after it, over the
   size cap; a swapped course folder; reading what the instructor holds
   (all refused or charged, the honest student graded exactly); a
   hand-in holding links to /etc/shadow, a class-mate's file and
   /dev/zero, a setuid bash and a FIFO (issue 53: left out, listed, the
   class collected); a cell
   that allocates 3 GiB and one that forks without end (that student's
   kernel ends at her server's cgroup, the hub and another student go on);
7. disks of a fixed size, without quota tools: a home filled past its
   disk fails in that home alone, and a hoard written straight into
   inbound stops at the exchange's disk, not the machine's.

Needs root (accounts, PAM, servers run as the students): CI runs as root;
anyone else gets a failure saying so, never a skip.
"""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from tests.test_browser import browser  # noqa: F401 (a fixture, used by hub_browser)
from tests.test_browser import (alive, descendants, solution_text, validate_button,
                                wait_for, wait_until_gone)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hub"))
import hubctl  # noqa: E402
from autograder.intake.gate import GATE_GID  # noqa: E402

SERVICE = f"formgrader-{hubctl.COURSE_ID}"
WAIT = 90
QUESTIONS = 10
DISK_MB = 64  # each home's and the exchange's disk in these tests
TIMES: dict[str, float] = {}  # what the closing note reports, measured here


def answers(master: nbformat.NotebookNode, wrong: set[int]) -> dict[str, str]:
    """grade id -> the answer cell's source: the master's letter, or another
    letter for the questions in `wrong`."""
    out = {}
    for n in range(1, QUESTIONS + 1):
        right = re.search(r'"([A-D])"', solution_text(master, f"quiz_q{n}")).group(1)
        letter = next(x for x in "ABCD" if x != right) if n in wrong else right
        out[f"quiz_q{n}"] = f'q{n} = "{letter}"'
    return out


def answered(notebook: dict, chosen: dict[str, str]) -> dict:
    """The notebook's JSON with each answer cell's source replaced."""
    for cell in notebook["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in chosen:
            cell["source"] = chosen[gid]
    return notebook


def as_user(name: str, args: list[str], cwd: Path | None = None, env: dict | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
    home = pwd.getpwnam(name).pw_dir
    base = {"HOME": home, "USER": name, "PATH": f"{hubctl.PREFIX / 'venv' / 'bin'}:/usr/bin:/bin"}
    done = subprocess.run(["runuser", "-u", name, "--", "env", "-i",
                           *[f"{k}={v}" for k, v in {**base, **(env or {})}.items()], *args],
                          cwd=cwd or home, capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, f"{name}: {' '.join(args)} failed:\n{done.stdout}{done.stderr}"
    return done


def memory_of(name: str) -> float:
    """MB resident in every process of the account `name` (its server, kernels)."""
    uid, total = pwd.getpwnam(name).pw_uid, 0
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        owner = re.search(r"^Uid:\s+(\d+)", status, re.M)
        rss = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        if owner and rss and int(owner.group(1)) == uid:
            total += int(rss.group(1))
    return round(total / 1024, 1)


def http(session, method: str, url: str, **kw):
    return session.request(method, url, timeout=30, allow_redirects=True, **kw)


def hub_login(base: str, name: str, password: str):
    """A requests session logged in to the hub as `name` (the login form)."""
    import requests

    session = requests.Session()
    page = http(session, "GET", f"{base}/hub/login")
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
    data = {"username": name, "password": password, **({"_xsrf": xsrf.group(1)} if xsrf else {})}
    done = session.post(f"{base}/hub/login", data=data, timeout=60, allow_redirects=False)
    assert done.status_code == 302, f"{name} could not log in: {done.status_code} {done.text[:300]}"
    return session


# ---------------------------------------------------------------- fixtures

# Seconds the hub gets to stop on SIGTERM before what is left is killed. Alone
# it stops in 1-2 s; beside the rest of `make test` it took 63 s, nearly all
# of it stopping its two services one after the other (SIGINT, then SIGTERM
# after a timeout), while the worker waited.
HUB_STOP = 15


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """A running hub and everything the course term needs; yields a dict
    the tests fill in order. Accounts and folders go afterwards."""
    if os.geteuid() != 0:
        pytest.fail("tests/test_hub.py needs root (it adds Linux accounts and runs their "
                    "servers): run `make test` as root, as CI does", pytrace=False)
    start = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="rag-hub-test-"))
    base.chmod(0o755)
    tag = secrets.token_hex(3)
    names = {"alice": f"rht{tag}a", "bob": f"rht{tag}b", "carol": f"rht{tag}c",
             "eve": f"rht{tag}e", "mallory": f"rht{tag}m", "hoarder": f"rht{tag}h",
             "trudy": f"rht{tag}t",
             "grader": f"rht{tag}g"}
    passwords = {n: secrets.token_urlsafe(16) for n in names.values()}
    made, proc, log, started = [], None, None, set()
    shots = tmp_path_factory.mktemp("hub-shots")
    try:
        for key, name in names.items():
            hubctl.add_user(name, passwords[name], None if key == "grader" else
                            hubctl.STUDENTS_GROUP)
            made.append(name)
        course = base / "course"  # the instructor's course root: closed to students
        course.mkdir(mode=0o700)
        shutil.copytree(ROOT / "release" / "quiz", course / "release" / "quiz")
        exchange, state, grades = base / "exchange", base / "state", base / "grades"
        port = hubctl.free_port()
        # the homes and the exchange on small disks of their own (64 MB
        # each here; hub/README.md gives the course's sizes)
        env = hubctl.prepare(port=port, state=state, exchange=exchange, grader=names["grader"],
                             grades=grades, quiet=True, images=base / "disks", home_mb=DISK_MB,
                             exchange_mb=DISK_MB)
        log = open(base / "jupyterhub.log", "w")
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f",
                                 str(ROOT / "hub" / "jupyterhub_config.py")],
                                cwd=state, env={**os.environ, **env}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        import requests

        deadline = time.monotonic() + WAIT
        while True:
            assert proc.poll() is None, (
                f"the hub exited with {proc.returncode}:\n{(base / 'jupyterhub.log').read_text()[-4000:]}")
            try:
                if requests.get(f"{url}/hub/api/", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, (
                f"no hub on {url} after {WAIT} s:\n{(base / 'jupyterhub.log').read_text()[-4000:]}")
            time.sleep(0.3)
        TIMES["hub start (s)"] = round(time.monotonic() - t0, 1)
        hubctl.release("quiz", course, exchange)
        yield {"url": url, "base": base, "shots": shots, "course": course, "exchange": exchange,
               "grades": grades, "names": names, "passwords": passwords, "proc": proc,
               "master": nbformat.read(ROOT / "source" / "quiz" / "quiz.ipynb", as_version=4)}
    finally:
        if proc is not None:
            started = descendants(proc.pid) | {proc.pid}
            stopped = True
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # the hub stops its servers and proxy
                try:
                    proc.wait(timeout=HUB_STOP)
                except subprocess.TimeoutExpired:
                    stopped = False
            # a hub that stopped took its servers down: they get a moment to
            # go; one that did not gets no more time (the term is thrown away)
            left = alive(wait_until_gone(started, 20 if stopped else 0))
            for pid in left:
                os.kill(pid, signal.SIGKILL)  # only what this fixture started
            wait_until_gone(left, 10)  # (userdel refuses an account still in use)
        if log is not None:
            log.close()
            shutil.copyfile(base / "jupyterhub.log", shots / "jupyterhub.log")
            print(f"\nthe hub's log: {shots / 'jupyterhub.log'}")
        # the disks the hub mounted (the homes of the students whose servers
        # started, and the exchange), before their folders go
        disks = [Path(pwd.getpwnam(name).pw_dir) for name in made] + [base / "exchange"]
        for path in disks:
            hubctl.disks.unmount(path)
        removed = []
        for name in made:
            done = subprocess.run(["userdel", "-r", name], capture_output=True, text=True)
            if done.returncode not in (0, 12):  # 12: the mail spool was not there
                removed.append(f"{name}: {done.stderr.strip()}")
        shutil.rmtree(base, ignore_errors=True)
        TIMES["whole module (s)"] = round(time.monotonic() - start, 1)
        print(f"\nhub test times: {json.dumps(TIMES)}")
        assert not removed, f"accounts not removed: {removed}"
        assert not [n for n in made if _exists(n)], "a throwaway account is still there"
        assert not hubctl.disks.mount_points() & set(map(str, disks)), "a disk is still mounted"


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@pytest.fixture(scope="module")
def hub_browser(term, browser):  # noqa: F811 (test_browser's fixture, after the hub)
    """The module's headless Chromium (tests/test_browser.py), once the hub is up."""
    return browser

# ------------------------------------------------------------------ helpers

def menu_items(driver, menu: str) -> list[str]:
    from selenium.webdriver.common.by import By

    from selenium.common.exceptions import ElementClickInterceptedException
    from selenium.webdriver.common.keys import Keys

    def opened(d):
        # a dialog JupyterLab opens on its own (a restored notebook's kernel
        # choice, say) would take the click: close it first
        for button in d.find_elements(By.CSS_SELECTOR, ".jp-Dialog .jp-mod-reject"):
            button.click()
        if d.find_elements(By.CSS_SELECTOR, ".jp-Dialog"):
            d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
            return False
        item = next((m for m in d.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
                     if m.text == menu), None)
        try:
            return item is not None and (item.click() or True)
        except ElementClickInterceptedException:
            return False

    wait_for(driver, opened, f"the {menu} menu opened", 60)
    return wait_for(driver, lambda d: [m.text for m in d.find_elements(
        By.CSS_SELECTOR, ".lm-Menu .lm-Menu-item")
        if m.is_displayed()] or None, f"the items of the {menu} menu", 30)


def assignment_list(driver, url: str, user: str) -> None:
    """Open `user`'s JupyterLab and, from the Nbgrader menu, the Assignments panel."""
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/user/{user}/lab")
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item"),
             "JupyterLab", 120)
    menu_items(driver, "Nbgrader")
    next(m for m in driver.find_elements(By.CSS_SELECTOR, ".lm-Menu-item")
         if m.text == "Assignment List").click()


def panel_button(driver, list_id: str, label: str):
    """The button `label` in the Assignments panel's list `list_id`."""
    return driver.execute_script("""
        const list = document.getElementById(arguments[0]);
        return list ? [...list.querySelectorAll('button')]
          .find(b => b.textContent.trim() === arguments[1]) || null : null;""",
                                 list_id, label)


def refresh_panel(driver) -> None:
    driver.execute_script("const b = document.getElementById('refresh_assignments_list');"
                          "if (b) b.click();")


# -------------------------------------------------------------------- tests

def test_a_student_fetches_answers_validates_and_submits_in_jupyterlab(term, hub_browser):
    from selenium.webdriver.common.by import By

    driver, url = hub_browser, term["url"]
    alice = term["names"]["alice"]
    shots = term["shots"]
    t0 = time.monotonic()
    driver.get(f"{url}/hub/login")
    driver.find_element(By.ID, "username_input").send_keys(alice)
    driver.find_element(By.ID, "password_input").send_keys(term["passwords"][alice])
    driver.find_element(By.ID, "login_submit").click()
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
             and "/lab" in d.current_url, "JupyterLab after the login", 120)
    TIMES["login to a loaded Lab (s)"] = round(time.monotonic() - t0, 1)
    assert f"/user/{alice}/lab" in driver.current_url, driver.current_url
    TIMES["a student's idle server (MB resident)"] = memory_of(alice)
    assert TIMES["a student's idle server (MB resident)"] > 20, "no process runs as the student"

    # the Nbgrader menu offers the Assignments panel and nothing of the instructor's
    items = menu_items(driver, "Nbgrader")
    assert items == ["Assignment List"], f"the student's Nbgrader menu: {items}"
    next(m for m in driver.find_elements(By.CSS_SELECTOR, ".lm-Menu-item")
         if m.text == "Assignment List").click()
    fetch = wait_for(driver, lambda d: panel_button(d, "released_assignments_list", "Fetch"),
                     "the quiz with a Fetch button in the Assignments panel")
    released = driver.find_element(By.ID, "released_assignments_list").text
    assert "quiz" in released, released
    fetch.click()
    wait_for(driver, lambda d: panel_button(d, "fetched_assignments_list", "Submit"),
             "the fetched quiz with a Submit button")
    quiz = Path(pwd.getpwnam(alice).pw_dir) / "quiz" / "quiz.ipynb"
    assert quiz.is_file() and quiz.stat().st_uid == pwd.getpwnam(alice).pw_uid

    # answer: the student's own server saves the answers (its contents API,
    # from this browser session, as JupyterLab's editor would)
    notebook = answered(json.loads(quiz.read_text()), answers(term["master"], wrong=set()))
    status = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
        fetch(arguments[0], {method: 'PUT', credentials: 'same-origin',
              headers: {'Content-Type': 'application/json', 'X-XSRFToken': xsrf},
              body: JSON.stringify({type: 'notebook', format: 'json', content: arguments[1]})})
          .then(r => done(r.status), e => done(String(e)));""",
        f"{url}/user/{alice}/api/contents/quiz/quiz.ipynb", notebook)
    assert status in (200, 201), f"saving the answers: {status}"

    # Validate, in the notebook's toolbar
    driver.get(f"{url}/user/{alice}/lab/tree/quiz/quiz.ipynb")
    button = validate_button(driver, 120)
    button.click()
    dialog = wait_for(driver, lambda d: next((
        n for n in d.find_elements(By.CSS_SELECTOR, ".jp-Dialog-content")
        if "Success" in n.text or "failed" in n.text), None), "nbgrader's validation result")
    assert "Success! Your notebook passes all the tests." in dialog.text, dialog.text[:1500]
    TIMES["the student's processes after Validate (MB resident)"] = memory_of(alice)
    shot = shots / "student-validated.png"
    driver.save_screenshot(str(shot))
    print(f"\nscreenshot of the student's validated quiz: {shot}")
    TIMES["screenshot"] = str(shot)
    dialog.find_element(By.CSS_SELECTOR, ".jp-Dialog-button").click()

    # submit in the Assignments panel
    assignment_list(driver, url, alice)
    wait_for(driver, lambda d: panel_button(d, "fetched_assignments_list", "Submit"),
             "the Submit button").click()
    wait_for(driver, lambda d: re.search(r"\d{4}-\d\d-\d\d", d.find_element(
        By.ID, "submitted_assignments_list").text), "the submission's time in the panel")
    inbound = term["exchange"] / hubctl.COURSE_ID / "inbound"
    mine = sorted(inbound.glob(f"{alice}+quiz+*"))
    assert len(mine) == 1, f"one submission of {alice} in the exchange: {mine}"
    term["alice_submitted"] = datetime.now(timezone.utc)
    driver.save_screenshot(str(shots / "student-submitted.png"))


def test_a_second_student_submits_from_the_shell_and_nobody_reads_anyone_else(term):
    alice, bob = term["names"]["alice"], term["names"]["bob"]
    time.sleep(1.5)  # the late policy's due date goes between the two submissions
    term["due"] = datetime.now(timezone.utc)
    time.sleep(1.5)
    env = {"RAG_COURSE_EXCHANGE": str(term["exchange"])}
    as_user(bob, ["nbgrader", "fetch_assignment", "quiz"], env=env)
    quiz = Path(pwd.getpwnam(bob).pw_dir) / "quiz" / "quiz.ipynb"
    notebook = answered(json.loads(quiz.read_text()), answers(term["master"], wrong={3}))
    as_user(bob, ["python", "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
                  str(quiz), json.dumps(notebook)], env=env)
    as_user(bob, ["nbgrader", "submit", "quiz"], env=env)

    alice_home = Path(pwd.getpwnam(alice).pw_dir)
    inbound = term["exchange"] / hubctl.COURSE_ID / "inbound"
    theirs = sorted(inbound.glob(f"{alice}+quiz+*"))[0]
    # nbgrader leaves a submission readable by all (the instructor is another
    # account) and relies on an inbound nobody can list and on 72 random bits
    # at the end of each submission's name: without them it is not found
    assert re.fullmatch(rf"{alice}\+quiz\+[^+]+\+[A-Za-z0-9_=-]{{12}}", theirs.name), theirs.name
    guessed = theirs.name.rsplit("+", 1)[0]
    for what, args, says in [
            ("the other student's home", ["cat", str(alice_home / "quiz" / "quiz.ipynb")],
             "Permission denied"),
            ("the exchange's inbound (a listing)", ["ls", str(inbound)], "Permission denied"),
            ("the other student's submission without its random part",
             ["cat", str(inbound / guessed / "quiz.ipynb")], "No such file"),
            ("the masters", ["cat", str(ROOT / "source" / "quiz" / "quiz.ipynb")],
             "Permission denied"),
            ("the instructor's course", ["ls", str(term["course"])], "Permission denied")]:
        done = as_user(bob, args, check=False)
        assert done.returncode != 0 and says in done.stderr, (
            f"{bob} could read {what}: {done.stdout[:200]}{done.stderr[:200]}")
    assert (alice_home.stat().st_mode & 0o777) == 0o700


def test_the_instructor_collects_and_grades_with_the_late_policy(term):
    alice, bob = term["names"]["alice"], term["names"]["bob"]
    log = hubctl.collect("quiz", term["course"], term["exchange"])
    submitted = term["course"] / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted([alice, bob]), log
    stamps = {s: (submitted / s / "quiz" / "timestamp.txt").read_text() for s in (alice, bob)}
    due = term["due"]
    policy = term["base"] / "deadlines.toml"
    policy.write_text(f"[quiz]\ndue = {due.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}\n"
                      "penalty_per_day = 10\nmax_penalty = 30\n")
    t0 = time.monotonic()
    done = subprocess.run([sys.executable,
                           str(ROOT / "autograder" / "commands" / "course.py"), "grade",
                           "--submissions", str(submitted), "--out", str(term["grades"]),
                           "--deadlines", str(policy)], capture_output=True, text=True,
                          timeout=300)
    TIMES["grading two quizzes (s)"] = round(time.monotonic() - t0, 1)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(done.stdout[-1500:])
    import pandas as pd

    late = pd.read_csv(term["grades"] / "late_work.csv").set_index("student")
    print(f"late work (due {due:%H:%M:%S.%f} UTC; exchange times {stamps}):\n"
          f"{late.drop(columns=['note']).to_string()}")
    assert late.loc[alice, "days late"] == 0 and late.loc[alice, "penalty"] == 0
    assert late.loc[alice, "after penalty"] == 10
    assert late.loc[bob, "days late"] == 1, late.loc[bob].to_dict()
    assert late.loc[bob, "before penalty"] == 9 and late.loc[bob, "penalty"] == 1
    assert late.loc[bob, "after penalty"] == 8 and late.loc[bob, "accepted"] == "yes"
    sheet = pd.read_csv(term["grades"] / "grade_sheet.csv").set_index("student")
    assert sheet.loc[bob, "quiz"] == 8 and sheet.loc[bob, "quiz before penalty"] == 9
    assert sheet.loc[alice, "quiz"] == 10 and sheet.loc[bob, "total"] == 8
    assert "1 day(s) late" in (term["grades"] / "late_work.html").read_text()


def test_formgrader_is_the_graders_service_and_a_student_gets_403(term, hub_browser):
    url, grader, bob = term["url"], term["names"]["grader"], term["names"]["bob"]
    hubctl.hand_to_grader(term["grades"], grader)
    for what, path in [("the graded course's masters", term["grades"] / "formgrader" / "source"
                        / "quiz" / "quiz.ipynb"),
                       ("another student's feedback", term["grades"] / "quiz" / "feedback"
                        / term["names"]["alice"] / "quiz" / "quiz.html")]:
        done = as_user(bob, ["cat", str(path)], check=False)
        assert done.returncode != 0 and "Permission denied" in done.stderr, f"{bob} read {what}"
    service = f"{url}/services/{SERVICE}/formgrader"
    # the student in the browser: the hub refuses the service
    hub_browser.get(service)
    wait_for(hub_browser, lambda d: "403" in d.page_source, "403 for the student", 60)
    student = hub_login(url, bob, term["passwords"][bob])
    assert http(student, "GET", service).status_code == 403

    marker = hub_login(url, grader, term["passwords"][grader])
    page = http(marker, "GET", service)
    assert page.status_code == 200 and "Manage Assignments" in page.text, page.text[:500]
    api = f"{url}/services/{SERVICE}/formgrader/api"
    xsrf = marker.cookies.get("_xsrf", path=f"/services/{SERVICE}/") or next(
        (c.value for c in marker.cookies if c.name == "_xsrf"), "")
    subs = http(marker, "GET", f"{api}/submitted_notebooks/quiz/quiz").json()
    theirs = next(s for s in subs if s["student"] == bob)
    grades = http(marker, "GET", f"{api}/grades", params={"submission_id": theirs["id"]}).json()
    q3 = next(g for g in grades if g["name"] == "quiz_hidden_q3")
    assert q3["auto_score"] == 0
    done = http(marker, "PUT", f"{api}/grade/{q3['id']}", headers={"X-XSRFToken": xsrf},
                data=json.dumps({"manual_score": 0.5, "extra_credit": 0}))
    assert done.status_code == 200, done.text[:500]
    # the mark reaches the grade sheet; the late penalty still applies
    sheet = subprocess.run([sys.executable,
                            str(ROOT / "autograder" / "commands" / "course.py"), "sheet",
                            "--out", str(term["grades"])], capture_output=True, text=True)
    assert sheet.returncode == 0, sheet.stderr[-2000:]
    import pandas as pd

    row = pd.read_csv(term["grades"] / "grade_sheet.csv").set_index("student").loc[bob]
    assert row["quiz before penalty"] == 9.5 and row["quiz"] == 8.5, row.to_dict()


def test_feedback_is_released_and_the_student_opens_it(term, hub_browser):
    from selenium.webdriver.common.by import By

    driver, url, alice = hub_browser, term["url"], term["names"]["alice"]
    hubctl.release_feedback("quiz", term["grades"], term["exchange"])
    assignment_list(driver, url, alice)
    wait_for(driver, lambda d: panel_button(d, "submitted_assignments_list", "Fetch Feedback"),
             "the Fetch Feedback button").click()
    wait_for(driver, lambda d: "view feedback" in d.find_element(
        By.ID, "submitted_assignments_list").text, "the view feedback link")
    found = sorted((Path(pwd.getpwnam(alice).pw_dir) / "quiz" / "feedback").glob("*/quiz.html"))
    assert len(found) == 1, found
    relative = found[0].relative_to(pwd.getpwnam(alice).pw_dir)
    driver.get(f"{url}/user/{alice}/files/{urllib.parse.quote(str(relative))}")
    wait_for(driver, lambda d: "10" in d.find_element(By.TAG_NAME, "body").text
             and "Question 1" in d.find_element(By.TAG_NAME, "body").text,
             "the feedback page with the quiz's points", 60)
    driver.save_screenshot(str(term["shots"] / "student-feedback.png"))



# ------------------------------------------------- tricks at the exchange

WRITE = "import sys; open(sys.argv[1], 'w').write(sys.argv[2])"
# a hostile student needs no nbgrader to hand in: a folder named as
# nbgrader names them, with the notebook and a timestamp.txt of her choice
HAND_IN = """import json, os, sys
for name, when, notebook in json.loads(sys.argv[1]):
    folder = os.path.join(sys.argv[2], name)
    os.mkdir(folder)
    open(os.path.join(folder, 'quiz.ipynb'), 'w').write(notebook)
    open(os.path.join(folder, 'timestamp.txt'), 'w').write(when)
    if int(sys.argv[3]):
        open(os.path.join(folder, 'data.bin'), 'w').truncate(int(sys.argv[3]))
"""


def quiz_notebook(term, wrong: set[int]) -> str:
    released = json.loads((ROOT / "release" / "quiz" / "quiz.ipynb").read_text())
    return json.dumps(answered(released, answers(term["master"], wrong=wrong)))


def submit_quiz(term, key: str, wrong: set[int], submit: bool = True) -> Path:
    """`key`'s account submits the quiz with nbgrader, the answers in
    `wrong` wrong; returns the new inbound folder (or, without `submit`,
    the folder it would submit)."""
    name = term["names"][key]
    quiz = Path(pwd.getpwnam(name).pw_dir) / "quiz"
    as_user(name, ["mkdir", "-p", str(quiz)])
    as_user(name, ["python", "-c", WRITE, str(quiz / "quiz.ipynb"), quiz_notebook(term, wrong)])
    if not submit:
        return quiz
    inbound = term["exchange"] / hubctl.COURSE_ID / "inbound"
    before = set(inbound.iterdir())
    as_user(name, ["nbgrader", "submit", "quiz"],
            env={"RAG_COURSE_EXCHANGE": str(term["exchange"])})
    (new,) = set(inbound.iterdir()) - before
    return new


def hand_in(term, key: str, folders: list[tuple[str, str, set[int]]],
            extra_bytes: int = 0) -> None:
    """`key`'s account puts (student, time, wrong answers) folders in inbound
    by hand, each named for `student` and dated `time` (with a file of
    `extra_bytes` beside the notebook when not 0)."""
    inbound = term["exchange"] / hubctl.COURSE_ID / "inbound"
    made = [(f"{student}+quiz+{when}+{secrets.token_urlsafe(9)}", when,
             quiz_notebook(term, wrong)) for student, when, wrong in folders]
    as_user(term["names"][key], ["python", "-c", HAND_IN, json.dumps(made), str(inbound),
                                 str(extra_bytes)])


def test_tricks_at_the_exchange_are_refused_or_charged_and_honest_work_is_graded(term, capsys):
    """carol submits on time; eve on time too, then rewrites her notebook
    after the due date; mallory hands in as carol dated 2099, hands in late
    with a name and a timestamp.txt dated before the due date, and once more
    dated 2099 under her own name; she tries to swap the course folder, to
    move or write into carol's submission and to read what the instructor
    holds. carol is graded exactly, eve and mallory are late, the rest refused."""
    import pandas as pd

    carol, eve, mallory = (term["names"][k] for k in ("carol", "eve", "mallory"))
    exchange, inbound = term["exchange"], term["exchange"] / hubctl.COURSE_ID / "inbound"
    env = {"RAG_COURSE_EXCHANGE": str(exchange)}
    t0 = time.monotonic()
    carols = submit_quiz(term, "carol", wrong=set())
    eves = submit_quiz(term, "eve", wrong=set())
    future = "2099-01-01 00:00:00.000000 UTC"
    hand_in(term, "mallory", [(carol, future, {1, 2, 3, 4})])
    time.sleep(1.5)
    due = datetime.now(timezone.utc)
    time.sleep(1.5)
    early = (due - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    hand_in(term, "mallory", [(mallory, early, {1}), (mallory, future, set())])
    as_user(eve, ["python", "-c", "import sys; open(sys.argv[1], 'a').write(' ')",
                  str(eves / "quiz.ipynb")])
    # one more student fills the exchange past the cap (no disk quotas here)
    hoarder = term["names"]["hoarder"]
    hoard = submit_quiz(term, "hoarder", wrong=set(), submit=False)
    as_user(hoarder, ["truncate", "-s", f"{hubctl.EXCHANGE_BYTES + 1}", str(hoard / "data.bin")])
    done = as_user(hoarder, ["nbgrader", "submit", "quiz"], check=False, env=env)
    assert "more than the 20 MB the course accepts" in done.stdout + done.stderr, done
    hand_in(term, "hoarder", [(hoarder, early, set())], extra_bytes=hubctl.EXCHANGE_BYTES + 1)
    # the course folder and a class-mate's submission cannot be moved or changed
    for what, args in [("swap the course folder", ["mv", str(exchange / hubctl.COURSE_ID),
                                                   str(exchange / "elsewhere")]),
                       ("move a class-mate's submission", ["mv", str(carols), str(inbound / "x")]),
                       ("write into a class-mate's submission",
                        ["touch", str(carols / "extra.txt")])]:
        done = as_user(mallory, args, check=False)
        assert done.returncode != 0, f"{mallory} could {what}"

    course = term["base"] / "course-tricks"
    course.mkdir(mode=0o755)  # left open: collect closes what it writes
    status = hubctl.main(["collect", "quiz", "--course", str(course),
                          "--exchange", str(exchange)])
    said = capsys.readouterr()
    assert status == 1 and "refused" in said.err, said
    rows = pd.read_csv(course / "exchange_collected.csv", keep_default_na=False)
    print(rows.to_string())
    mine = rows[rows.student.isin([carol, eve, mallory])]
    refused = mine[mine.status == "refused"]
    assert sorted(refused.note.str.split(" ").str[0]) == ["dated", "handed"], refused
    hoarded = rows[rows.student == hoarder]
    assert hoarded.status.tolist() == ["refused"] and "nothing was taken" in hoarded.note.iloc[0]
    assert not (course / "submitted" / hoarder).exists()
    assert f"handed in by {mallory}, not by {carol}" in " ".join(refused.note)
    flagged = mine[(mine.status == "collected") & mine.note.str.contains("claims an earlier")]
    assert flagged.student.tolist() == [mallory], mine
    submitted = course / "submitted"
    carols_copy = json.loads((submitted / carol / "quiz" / "quiz.ipynb").read_text())
    assert carols_copy == json.loads((carols / "quiz.ipynb").read_text()), \
        "carol's graded copy is not her own submission"
    for path in [submitted, submitted / carol, course / "exchange_collected.csv"]:
        assert path.stat().st_mode & 0o077 == 0, f"{path} is open to other accounts"
    # the copy itself: for the grader's reader (its group), never for others
    for path in [submitted / carol / "quiz", submitted / carol / "quiz" / "quiz.ipynb"]:
        info = path.stat()
        assert info.st_mode & 0o007 == 0 and info.st_gid == GATE_GID, \
            f"{path} is open to other accounts, or not to the grader's reader"

    # eve's lateness is the time the late policy reads (grading carol and
    # mallory shows the policy reads it); graded, she would cost 30-50 s more
    received = datetime.strptime((submitted / eve / "quiz" / "timestamp.txt").read_text(),
                                 "%Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=timezone.utc)
    assert received > due, f"eve's rewrite after the due date was not counted: {received}"
    for other in set(p.name for p in submitted.iterdir()) - {carol, mallory}:
        shutil.rmtree(submitted / other)  # eve, and the earlier tests' students
    grades = term["base"] / "grades-tricks"
    policy = term["base"] / "deadlines-tricks.toml"
    policy.write_text(f"[quiz]\ndue = {due.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}\n"
                      "penalty_per_day = 10\nmax_penalty = 30\n")
    t1 = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "autograder" / "commands" / "course.py"),
                           "grade", "--submissions", str(submitted), "--out", str(grades),
                           "--deadlines", str(policy)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    TIMES["grading the tricks' class (s)"] = round(time.monotonic() - t1, 1)
    # what collect refused reaches the grades' problems.csv (course.py grade
    # reads COURSE/exchange_collected.csv beside SUBMISSIONS=COURSE/submitted)
    problems = pd.read_csv(grades / "quiz" / "problems.csv", dtype=str, keep_default_na=False)
    carried = problems[problems.problem.str.startswith("(exchange) ")]
    assert {carol, hoarder} <= set(carried.student), problems.to_string()
    assert carried.problem.str.contains(f"handed in by {mallory}, not by {carol}").any()
    late_work = pd.read_csv(grades / "late_work.csv").set_index("student")
    assert late_work.loc[carol, "days late"] == 0 and late_work.loc[carol, "after penalty"] == 10
    assert late_work.loc[mallory, "days late"] == 1, late_work.loc[mallory].to_dict()
    assert late_work.loc[mallory, "before penalty"] == 9
    assert late_work.loc[mallory, "after penalty"] == 8
    # her claim (the timestamp.txt she wrote) beside it, flagged; carol's
    # claim, nbgrader's own, within a moment of receipt
    claims = pd.read_csv(grades / "late_work.csv", dtype=str, keep_default_na=False)
    claims = claims.set_index("student")[["claimed by the student (UTC)", "claim earlier"]]
    assert claims.loc[mallory].tolist() == [f"{due - timedelta(hours=1):%Y-%m-%d %H:%M:%S}",
                                            "yes"], claims
    hers = datetime.strptime(claims.loc[carol, "claimed by the student (UTC)"],
                             "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    assert abs(hers - due) < timedelta(minutes=1) and claims.loc[carol, "claim earlier"] == ""

    # nothing the instructor holds is readable by a student, before and after
    # the grader account is handed formgrader
    for stage in ("graded", "handed to the grader"):
        for path in [submitted / carol / "quiz" / "quiz.ipynb", grades / "grade_sheet.csv",
                     grades / "late_work.csv", grades / "deadlines.toml",
                     grades / "quiz" / "feedback" / carol / "quiz" / "quiz.html",
                     ROOT / ".git", ROOT / "source" / "quiz" / "quiz.ipynb"]:
            assert path.exists(), path
            done = as_user(mallory, ["cat", str(path)], check=False)
            assert done.returncode != 0 and "Permission denied" in done.stderr, \
                f"{mallory} read {path} ({stage})"
        hubctl.hand_to_grader(grades, term["names"]["grader"])
    TIMES["tricks at the exchange, collected and graded (s)"] = round(time.monotonic() - t0, 1)


# a hostile student's hand-in holds what no plain copy may follow or keep
# (issue 53): links to /etc/shadow, to a class-mate's file and to /dev/zero,
# a setuid copy of bash, a FIFO
HOSTILE = r"""import os, shutil, sys
folder, notebook, classmate = sys.argv[1:4]
os.mkdir(folder, 0o755)
open(os.path.join(folder, 'quiz.ipynb'), 'w').write(notebook)
os.symlink('/etc/shadow', os.path.join(folder, 'shadow'))
os.symlink(classmate, os.path.join(folder, 'classmate.txt'))
os.symlink('/dev/zero', os.path.join(folder, 'zero'))
shutil.copyfile('/bin/bash', os.path.join(folder, 'bash'))
os.chmod(os.path.join(folder, 'bash'), 0o4755)
os.mkfifo(os.path.join(folder, 'pipe'))
"""


def test_links_setuid_and_a_fifo_in_a_hand_in_are_refused_and_the_class_collected(
        term, capsys):
    """trudy hands in links to /etc/shadow, to a file in carol's 0700 home
    and to /dev/zero, a setuid bash and a FIFO beside her notebook; bob
    submits honestly. The collect takes bob's exactly and trudy's notebook
    and bash as plain 0600 files, nothing else, writes a few MB at most,
    lists what it refused and exits 1."""
    import pandas as pd

    bob, carol, trudy = (term["names"][k] for k in ("bob", "carol", "trudy"))
    exchange, inbound = term["exchange"], term["exchange"] / hubctl.COURSE_ID / "inbound"
    secret = secrets.token_hex(16)
    classmate = Path(pwd.getpwnam(carol).pw_dir) / "secret.txt"
    as_user(carol, ["python", "-c", WRITE, str(classmate), secret])
    t0 = time.monotonic()
    bobs = submit_quiz(term, "bob", wrong={2})
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    as_user(trudy, ["python", "-c", HOSTILE,
                    str(inbound / f"{trudy}+quiz+{now}+{secrets.token_urlsafe(9)}"),
                    quiz_notebook(term, wrong=set()), str(classmate)])

    course = term["base"] / "course-hostile"
    course.mkdir(mode=0o700)
    t1 = time.monotonic()
    status = hubctl.main(["collect", "quiz", "--course", str(course),
                          "--exchange", str(exchange)])
    TIMES["collecting a hostile hand-in (s)"] = round(time.monotonic() - t1, 1)
    said = capsys.readouterr()
    assert status == 1 and f"{trudy}: {trudy}+quiz+" in said.err, said
    submitted = course / "submitted"
    assert json.loads((submitted / bob / "quiz" / "quiz.ipynb").read_text()) == \
        json.loads((bobs / "quiz.ipynb").read_text()), "bob's copy is not his submission"
    hers = submitted / trudy / "quiz"
    assert sorted(p.name for p in hers.iterdir()) == ["bash", "quiz.ipynb", "timestamp.txt"]
    shadow = Path("/etc/shadow").read_bytes()
    written = 0
    for folder, dirs, files in os.walk(course):
        for name in dirs + files:
            info = os.lstat(os.path.join(folder, name))
            assert stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode), (folder, name)
            assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX), (folder, name)
            if stat.S_ISREG(info.st_mode):
                written += info.st_size
                data = Path(folder, name).read_bytes()
                assert secret.encode() not in data and (not shadow or shadow not in data)
    assert stat.S_IMODE(os.lstat(hers / "bash").st_mode) == 0o640  # the gate's mode, not 4755
    assert written < 5 * 2 ** 20, f"the collect wrote {written} bytes"
    TIMES["bytes written by the hostile collect"] = written
    rows = pd.read_csv(course / "exchange_collected.csv", keep_default_na=False)
    (note,) = rows[rows.student == trudy].note
    assert rows[rows.student == trudy].status.tolist() == ["collected"]
    for refused in ("shadow", "classmate.txt", "zero", "pipe"):
        assert f"{refused}: " in note and "refused" in note, note
    TIMES["hostile hand-in, collected (s)"] = round(time.monotonic() - t0, 1)

# ------------------------------------------- a machine the class shares

def own_server(term, key: str) -> tuple[str, str]:
    """Log `key`'s account in, make it an API token, start its server
    through the hub's API; returns (its server's URL, the token)."""
    import requests

    name, url = term["names"][key], term["url"]
    session = hub_login(url, name, term["passwords"][name])
    xsrf = session.cookies.get("_xsrf") or ""
    made = session.post(f"{url}/hub/api/users/{name}/tokens", json={"note": "test"},
                        headers={"X-XSRFToken": xsrf}, timeout=30)
    assert made.status_code in (200, 201), made.text[:300]
    token = made.json()["token"]
    auth = {"Authorization": f"token {token}"}
    requests.post(f"{url}/hub/api/users/{name}/server", headers=auth, timeout=60)
    deadline = time.monotonic() + 120
    while not (requests.get(f"{url}/hub/api/users/{name}", headers=auth, timeout=30)
               .json().get("servers", {}).get("", {}).get("ready")):
        assert time.monotonic() < deadline, f"{name}'s server did not start"
        time.sleep(0.5)
    return f"{url}/user/{name}", token


def run_cell(server: str, token: str, code: str, kernel: str | None = None,
             seconds: float = 90) -> dict:
    """Run `code` in a kernel of `server` (a new one unless `kernel`), over
    the kernel's websocket as JupyterLab does: {"kernel", "out", "reply",
    "state"}, where state is "restarting" or "dead" when the kernel died."""
    import requests
    import websocket

    auth = {"Authorization": f"token {token}"}
    if kernel is None:
        made = requests.post(f"{server}/api/kernels", json={"name": "python3"}, headers=auth,
                             timeout=60)
        assert made.status_code == 201, made.text[:300]
        kernel = made.json()["id"]
    ws = websocket.create_connection(
        f"{server.replace('http', 'ws', 1)}/api/kernels/{kernel}/channels",
        header=[f"Authorization: token {token}"], timeout=seconds)
    msg_id = secrets.token_hex(8)
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                   "session": secrets.token_hex(8), "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
    result = {"kernel": kernel, "out": "", "reply": None, "state": None}
    deadline = time.monotonic() + seconds
    idle = False  # the kernel's "idle" for this request: its output has all come
    try:
        # the reply (shell) and the output (iopub) come on two channels, in
        # no fixed order between them: a busy machine once delivered the
        # reply first, and a loop that stopped there read no output
        while (result["reply"] is None or not idle) and time.monotonic() < deadline:
            msg = json.loads(ws.recv())
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] in ("restarting", "dead"):
                result["state"] = content["execution_state"]
                break
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if kind == "stream":
                result["out"] += content["text"]
            elif kind == "execute_reply":
                result["reply"] = content["status"]
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
    except websocket.WebSocketException as err:
        result["state"] = f"closed ({err})"
    finally:
        ws.close()
    return result


def server_pid(name: str) -> int:
    """The pid of `name`'s jupyterhub-singleuser."""
    uid = pwd.getpwnam(name).pw_uid
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid and \
                    b"jupyterhub-singleuser" in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"no server runs as {name}")


def cgroup_folder(pid: int, controller: str) -> Path:
    """The cgroup folder of `pid` for `controller` (v1), or its one folder (v2)."""
    lines = [line.split(":", 2) for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]
    for _, names, path in lines:
        if controller in names.split(","):
            return Path("/sys/fs/cgroup", controller, path.lstrip("/"))
    for _, names, path in lines:
        if names == "":
            return Path("/sys/fs/cgroup", path.lstrip("/"))
    raise AssertionError(f"{pid} has no {controller} cgroup")


def cgroup_value(folder: Path, v1: str, v2: str) -> str:
    """The file `v1` of a v1 cgroup folder, or `v2` of a v2 one."""
    return (folder / (v1 if (folder / v1).exists() else v2)).read_text()


def oom_kills(memory: Path) -> int:
    return int(re.search(r"oom_kill (\d+)",
                         cgroup_value(memory, "memory.oom_control", "memory.events"))[1])


def processes_of(name: str) -> list[int]:
    uid = pwd.getpwnam(name).pw_uid
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append(int(entry.name))
    return found


HOG = "x = b'x' * (3 * 2 ** 30)\nprint('allocated', len(x))"
BOMB = """import os, time
forks = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        forks += 1
except OSError as err:
    print('fork refused after', forks, type(err).__name__)
"""


def test_a_memory_hog_and_a_fork_bomb_stop_in_that_students_server_alone(term):
    """mallory's cells allocate 3 GiB, then fork without end; her kernel is
    killed by her server's cgroup, her forks refused at its cap, and bob's
    kernel and the hub answer all along. Stopping her server ends every
    process she left."""
    import requests

    mallory = term["names"]["mallory"]
    t0 = time.monotonic()
    bad_server, bad_token = own_server(term, "mallory")
    good_server, good_token = own_server(term, "bob")
    honest = run_cell(good_server, good_token, "print(sum(range(10)))")
    assert honest["out"].strip() == "45", honest

    pid = server_pid(mallory)
    memory = cgroup_folder(pid, "memory")
    assert memory != cgroup_folder(server_pid(term["names"]["bob"]), "memory"), \
        "two students' servers share one cgroup"
    assert int(cgroup_value(memory, "memory.limit_in_bytes", "memory.max")) <= 2 ** 30
    cpu = cgroup_folder(pid, "cpu")
    assert cgroup_value(cpu, "cpu.cfs_quota_us", "cpu.max").split()[0] == "100000"
    killed = oom_kills(memory)
    hog = run_cell(bad_server, bad_token, HOG)
    assert "allocated" not in hog["out"] and hog["reply"] != "ok", hog
    assert oom_kills(memory) > killed, f"no process of {mallory} was killed: {hog}"
    assert server_pid(mallory) == pid, "the student's server itself went down"
    after = run_cell(good_server, good_token, "print(6 * 7)")
    assert after["out"].strip() == "42", f"bob's kernel answered {after}"

    bomb = run_cell(bad_server, bad_token, BOMB)
    assert "fork refused after" in bomb["out"], bomb
    forks = int(bomb["out"].split("after")[1].split()[0])
    assert forks < 256, f"{forks} processes forked past the cap"
    # while her forks hold her cap, the hub and the other student go on
    assert requests.get(f"{term['url']}/hub/api/", timeout=10).status_code == 200
    after = run_cell(good_server, good_token, "print(6 * 7)")
    assert after["out"].strip() == "42", f"bob's kernel answered {after}"
    requests.delete(f"{term['url']}/hub/api/users/{mallory}/server",
                    headers={"Authorization": f"token {bad_token}"}, timeout=60)
    deadline = time.monotonic() + 30
    while processes_of(mallory) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not processes_of(mallory), f"{mallory}'s processes outlived her server"
    assert not memory.exists(), f"{memory} was left behind"
    TIMES["memory hog and fork bomb (s)"] = round(time.monotonic() - t0, 1)


# ------------------------------------------------- disks of a fixed size

# run by a student: write `limit` bytes to `path`, a MiB at a time, then
# remove them again (whether the disk took them or not)
FILL = """import os
path, written = os.path.expanduser({path!r}), 0
try:
    with open(path, 'wb') as out:
        while written < {limit}:
            out.write(b'x' * 2 ** 20)
            written += 2 ** 20
        out.flush()
        os.fsync(out.fileno())
    print('wrote all', written)
except OSError as err:
    print('stopped after', written, err.strerror)
finally:
    if os.path.exists(path):
        os.remove(path)
"""


def mounts_at(path: Path) -> int:
    """How many file systems are mounted at `path` (stacked mounts count)."""
    return sum(line.split()[4] == str(path)
               for line in Path("/proc/self/mountinfo").read_text().splitlines())


def test_a_full_home_fails_in_that_students_home_alone_and_is_mounted_once(term):
    """alice's server (started in the browser above) runs on a home of its
    own 64 MB disk, made from what her home held (the account's skeleton
    files); her cell that writes twice that gets "No space left on device"
    in her home, while bob's server still saves a file in his; her image
    is closed to her and to bob; the spawner's step run again (as on a
    restart) mounts nothing twice."""
    import requests

    alice, bob = term["names"]["alice"], term["names"]["bob"]
    home = Path(pwd.getpwnam(alice).pw_dir)
    t0 = time.monotonic()
    server, token = own_server(term, "alice")
    full = run_cell(server, token, FILL.format(path="~/fill.bin", limit=2 * DISK_MB * 2 ** 20))
    assert "stopped after" in full["out"] and "No space left on device" in full["out"], full
    assert int(full["out"].split("stopped after")[1].split()[0]) < DISK_MB * 2 ** 20
    assert mounts_at(home) == 1, f"{home} is not on a disk of its own"
    assert (home / ".bashrc").is_file(), "the home's files did not move onto its disk"
    image = term["base"] / "disks" / f"home-{alice}.img"
    assert stat.S_IMODE(image.stat().st_mode) == 0o600 and image.stat().st_uid == 0
    assert stat.S_IMODE(image.parent.stat().st_mode) == 0o700
    for account in (alice, bob):
        done = as_user(account, ["head", "-c", "1", str(image)], check=False)
        assert done.returncode != 0 and "Permission denied" in done.stderr, \
            f"{account} read {image}"
    info = home.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (pwd.getpwnam(alice).pw_uid, 0o700)

    # bob's server saves a file in his home (its contents API, as Lab's editor)
    others, other_token = own_server(term, "bob")
    saved = requests.put(f"{others}/api/contents/beside.txt", timeout=60,
                         headers={"Authorization": f"token {other_token}"},
                         json={"type": "file", "format": "text", "content": "still here"})
    assert saved.status_code in (200, 201), saved.text[:300]
    assert (Path(pwd.getpwnam(bob).pw_dir) / "beside.txt").read_text() == "still here"

    # what the spawner runs before every start: alice's home is mounted already
    assert hubctl.disks.home_disk(alice, term["base"] / "disks", DISK_MB) is None
    assert mounts_at(home) == 1, f"{home} was mounted again over its own disk"
    TIMES["a full home (s)"] = round(time.monotonic() - t0, 1)


def test_a_hoard_in_inbound_fills_the_exchanges_disk_not_the_machines(term):
    """hoarder writes twice the exchange's 64 MB straight into a folder in
    inbound (no nbgrader, so no cap at submit): she is stopped at the
    exchange's own disk, which is not the machine's; once she removes her
    hoard, the room is there again."""
    exchange = term["exchange"]
    hoarder = term["names"]["hoarder"]
    t0 = time.monotonic()
    inbound = exchange / hubctl.COURSE_ID / "inbound"
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    folder = inbound / f"{hoarder}+quiz+{now}+{secrets.token_urlsafe(9)}"
    as_user(hoarder, ["mkdir", "-m", "755", str(folder)])
    done = as_user(hoarder, ["python", "-c", FILL.format(path=str(folder / "hoard.bin"),
                                                         limit=2 * DISK_MB * 2 ** 20)])
    assert "stopped after" in done.stdout and "No space left on device" in done.stdout, done
    assert int(done.stdout.split("stopped after")[1].split()[0]) < DISK_MB * 2 ** 20
    assert os.stat(folder).st_dev != os.stat(term["base"]).st_dev, "the hoard is on the root disk"
    assert mounts_at(exchange) == 1, f"{exchange} is not on a disk of its own"
    assert stat.S_IMODE(exchange.stat().st_mode) == hubctl.EXCHANGE_MODES[""]
    as_user(hoarder, ["rm", "-r", str(folder)])
    assert shutil.disk_usage(exchange).free > DISK_MB * 2 ** 20 // 2, "the space did not come back"
    TIMES["a hoard in the exchange (s)"] = round(time.monotonic() - t0, 1)
