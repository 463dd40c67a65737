"""hub/hubctl.py's checks: each bad input stops with a message that names
the problem and says what to do (no hub is started here; tests/test_hub.py
runs one)."""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hub"))
import hubctl  # noqa: E402


def test_a_port_in_use_says_how_to_pick_another():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(hubctl.HubProblem, match=rf"port {port} .* in use.*PORT=") as err:
            hubctl.check_port(port)
        assert "ss -ltnp" in str(err.value)
    assert hubctl.check_port(port) == port  # free again once closed


@pytest.mark.parametrize("version, fails", [((18, 19, 0), True), ((19, 9, 9), True),
                                            ((20, 0, 0), False), ((22, 3, 1), False)])
def test_node_older_than_20_is_refused_with_what_to_install(version, fails):
    if fails:
        with pytest.raises(hubctl.HubProblem, match=r"node .* too old.*20 or newer"):
            hubctl.check_node(version)
    else:
        assert hubctl.check_node(version) == version


def test_this_machines_node_is_read():
    assert hubctl.node_version()[0] >= 1


def test_a_missing_proxy_says_how_to_install_it(tmp_path):
    with pytest.raises(hubctl.HubProblem, match="npm install"):
        hubctl.check_proxy(tmp_path / "configurable-http-proxy")


def test_no_such_account_says_how_to_add_it():
    name = f"nobody{secrets.token_hex(4)}"
    with pytest.raises(hubctl.HubProblem, match=rf"no such grader account.*{name}.*add-user {name} --grader"):
        hubctl.user(name, "grader account")


def test_a_bad_account_name_is_refused_before_useradd():
    expected = "not a usable account name" if os.geteuid() == 0 else "must run as root"
    with pytest.raises(hubctl.HubProblem, match=expected):
        hubctl.add_user("Bad Name", None)
    assert hubctl.NAME.match("rht1a2b3ca") and not hubctl.NAME.match("-x")


def test_a_new_exchange_gets_sticky_folders_and_a_drifted_one_stops(tmp_path):
    root = tmp_path / "exchange"
    hubctl.check_exchange(root)
    course = root / hubctl.COURSE_ID
    modes = {path: path.stat().st_mode & 0o7777 for path in [root, *sorted(course.rglob("*")),
                                                             course]}
    # the sticky bit: only a folder's owner renames it (the course folder,
    # a class-mate's submission)
    assert modes == {root: 0o1777, course: 0o755, course / "outbound": 0o755,
                     course / "inbound": 0o3733, course / "feedback": 0o711}, modes
    (course / "inbound").chmod(0o2733)  # nbgrader's own, without the sticky bit
    with pytest.raises(hubctl.HubProblem) as err:
        hubctl.check_exchange(root)
    message = str(err.value)
    assert f"{course / 'inbound'} is 2733, the course wants 3733" in message
    assert f"chmod 3733 {course / 'inbound'}" in message


def test_a_swapped_course_folder_stops_the_collect(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("needs root: the exchange's folders must be root's", pytrace=False)
    import exchange_collect

    root = tmp_path / "exchange"
    hubctl.check_exchange(root)
    pinned = exchange_collect.Pinned(root, hubctl.COURSE_ID)
    try:
        pinned.check()  # nothing changed
        course = root / hubctl.COURSE_ID
        course.rename(root / "moved")
        (root / "moved").rename(course)  # back in place: the same folder, so fine
        pinned.check()
        course.rename(root / "moved")
        hubctl.check_exchange(root)  # a new course folder where the old one was
        with pytest.raises(exchange_collect.Swapped, match="replaced during the collect"):
            pinned.check()
    finally:
        pinned.close()


def test_a_collect_with_refusals_exits_1_and_grading_lists_them(capsys):
    """A real collect (the account nobody hands in; no hub): a link and a
    FIFO in one submission, another dated ahead. The collect takes the
    notebook, refuses the rest, exits 1 naming them; course.py's
    carry_refusals finds COURSE/exchange_collected.csv from
    SUBMISSIONS=COURSE/submitted and adds the quiz's rows to problems.csv,
    escaped, and none of another assignment's."""
    if os.geteuid() != 0:
        pytest.fail("needs root: the exchange's folders must be root's", pytrace=False)
    import tempfile

    import pandas as pd

    from autograder.commands import course as course_py

    base = Path(tempfile.mkdtemp(prefix="rag-hub-carry-"))
    try:
        base.chmod(0o755)  # nobody reads its own submission through it
        exchange, course, out = base / "exchange", base / "course", base / "grades"
        hubctl.check_exchange(exchange)
        inbound = exchange / hubctl.COURSE_ID / "inbound"
        now = "2026-01-05 10:00:00.000000 UTC"
        handed = {"quiz": inbound / f"nobody+quiz+{now}+a1",
                  "ahead": inbound / "nobody+quiz+2099-01-01 00:00:00.000000 UTC+b2"}
        for folder in handed.values():
            folder.mkdir(mode=0o755)
            (folder / "quiz.ipynb").write_text("{}")
        os.symlink("/etc/shadow", handed["quiz"] / "shadow")
        os.mkfifo(handed["quiz"] / "pipe\x1b]0;owned\x07")
        nobody = pwd.getpwnam("nobody")
        for folder in handed.values():
            for path in [folder, *folder.iterdir()]:
                os.lchown(path, nobody.pw_uid, nobody.pw_gid)
        status = hubctl.main(["collect", "quiz", "--course", str(course),
                              "--exchange", str(exchange)])
        said = capsys.readouterr().err
        assert status == 1, said
        assert said.count("nobody: nobody+quiz+") == 2 and "shadow" in said and "\x1b" not in said
        copy = course / "submitted" / "nobody" / "quiz"
        assert sorted(p.name for p in copy.iterdir()) == ["quiz.ipynb", "timestamp.txt"]

        (out / "quiz").mkdir(parents=True)
        assert course_py.carry_refusals(out, course / "submitted", "quiz") == 2
        problems = pd.read_csv(out / "quiz" / "problems.csv", dtype=str)
        assert problems["student"].tolist() == ["nobody", "nobody"]
        collected, ahead = sorted(problems["problem"], key=lambda p: "+a1" not in p)
        assert collected.startswith(f"(exchange) nobody+quiz+{now}+a1: collected: ")
        assert "shadow: " in collected and "pipe\\x1b]0;owned\\x07: " in collected
        assert ahead.startswith("(exchange) nobody+quiz+2099-01-01") and "refused" in ahead
        assert not any(c in "".join(problems["problem"]) for c in "\x1b\x07\n")
        assert course_py.carry_refusals(out, course / "submitted", "lab") == 0
    finally:
        shutil.rmtree(base)


def test_a_repository_other_accounts_can_read_stops_the_hub():
    if os.geteuid() != 0:
        pytest.fail("needs root: it reads as the account nobody", pytrace=False)
    import tempfile

    repo = Path(tempfile.mkdtemp(prefix="rag-hub-open-"))
    try:
        (repo / "source").mkdir()
        (repo / "source" / "quiz.ipynb").write_text("{}")
        repo.chmod(0o755)
        with pytest.raises(hubctl.HubProblem, match=r"'nobody' can read the course "
                           r"repository.*quiz\.ipynb.*chmod 700"):
            hubctl.check_closed("/usr/bin/python3", repo)
        assert hubctl.close_pack(repo), "nothing was closed"
        assert hubctl.check_closed("/usr/bin/python3", repo) == []
    finally:
        shutil.rmtree(repo)


def test_the_readmes_grades_folder_is_not_inside_the_hubs_closed_state():
    """`make hub GRADES=/srv/rag-course-hub/grades`, as hub/README.md says:
    the state folder is made 0700, so GRADES must not be inside it."""
    grades = Path("/srv/rag-course-hub/grades")
    assert grades.is_relative_to(hubctl.STATE.parent) and not grades.is_relative_to(hubctl.STATE)


def test_an_exchange_that_is_a_file_says_so(tmp_path):
    (tmp_path / "exchange").write_text("")
    with pytest.raises(hubctl.HubProblem, match="not a folder"):
        hubctl.check_exchange(tmp_path / "exchange")


def test_start_stops_with_status_2_and_the_message(tmp_path):
    name = f"nobody{secrets.token_hex(4)}"
    done = subprocess.run([sys.executable, str(ROOT / "hub" / "hubctl.py"), "start",
                           "--grader", name, "--port", str(hubctl.free_port()),
                           "--state", str(tmp_path / "state"),
                           "--grades", str(tmp_path / "grades"),
                           "--exchange", str(tmp_path / "exchange")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "make hub:" in done.stderr and (name in done.stderr or "root" in done.stderr)
    assert not (tmp_path / "state").exists()  # nothing was set up before the stop


def test_the_student_configuration_turns_the_instructor_tools_off():
    files = hubctl.student_config()
    page = json.loads(files["etc/jupyter/labconfig/page_config.json"])["disabledExtensions"]
    for plugin in ("formgrader", "create-assignment", "course-list"):
        assert page[f"@jupyter/nbgrader:{plugin}"] is True
    assert "@jupyter/nbgrader:assignment-list" not in page
    assert "@jupyter/nbgrader:menu" not in page
    server = json.loads(files["etc/jupyter/jupyter_server_config.d/zz-rag-course.json"])
    extensions = server["ServerApp"]["jpserver_extensions"]
    assert extensions["nbgrader.server_extensions.formgrader"] is False
    assert extensions["nbgrader.server_extensions.assignment_list"] is True
    assert "RAG_COURSE_EXCHANGE" in files["etc/jupyter/nbgrader_config.py"]


def test_the_runtime_holds_no_solution():
    names = hubctl.course_files()
    assert any(n.startswith("ragkit/") for n in names) and any(n.startswith("data/") for n in names)
    assert not [n for n in names if n.split("/")[0] not in ("ragkit", "data")]
    assert not [n for n, data in names.items() if b"### BEGIN SOLUTION" in data]


def test_an_exchange_that_holds_files_stays_where_it_is_and_says_how_to_move_it(tmp_path):
    """Mounting a disk over it would hide the students' work in it."""
    exchange = tmp_path / "exchange"
    (exchange / hubctl.COURSE_ID).mkdir(parents=True)
    said = hubctl.exchange_on_disk(exchange, 64, tmp_path / "disks")
    assert "holds files already" in said and "move it away" in said
    assert not hubctl.disks.mounted(exchange) and not (tmp_path / "disks").exists()
    assert hubctl.exchange_on_disk(exchange, 0, tmp_path / "disks") is None


def test_a_home_moves_onto_its_disk_as_the_student_and_one_too_large_is_left_as_it_was(
        tmp_path):
    """A throwaway account's home holds a file, a link to /etc/shadow and a
    file of root's only it cannot read: on its 16 MB disk it finds its file
    and its link (a link still, nothing of /etc/shadow read), not root's
    file. A home of 24 MB does not fit: the error says so, the home is
    not mounted and holds what it held, and no image is left."""
    name = f"rhc{secrets.token_hex(4)}"
    hubctl.add_user(name, None, None)
    home, images = Path(pwd.getpwnam(name).pw_dir), tmp_path / "disks"
    try:
        (home / "mine.txt").write_text("mine")
        os.chown(home / "mine.txt", pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid)
        (home / "shadow").symlink_to("/etc/shadow")
        (home / "roots.txt").write_text("root's")
        (home / "roots.txt").chmod(0o600)
        assert hubctl.disks.home_disk(name, images, 16) == images / f"home-{name}.img"
        assert hubctl.disks.mounted(home) and (home / "mine.txt").read_text() == "mine"
        assert os.readlink(home / "shadow") == "/etc/shadow"
        assert not (home / "roots.txt").exists()
        assert (home / "mine.txt").stat().st_uid == pwd.getpwnam(name).pw_uid

        hubctl.disks.unmount(home)
        (images / f"home-{name}.img").unlink()
        (home / "big.bin").write_bytes(secrets.token_bytes(24 * 2 ** 20))
        os.chown(home / "big.bin", pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid)
        with pytest.raises(hubctl.disks.DiskProblem, match=rf"{name}'s home cannot go on a "
                           r"16 MB disk: .*holds more than its disk takes"):
            hubctl.disks.home_disk(name, images, 16)
        assert not hubctl.disks.mounted(home) and (home / "big.bin").stat().st_size == 24 * 2 ** 20
        assert list(images.iterdir()) == []
    finally:
        hubctl.disks.unmount(home)
        subprocess.run(["userdel", "-r", name], capture_output=True)
    with pytest.raises(ValueError, match="megabytes"):
        hubctl.disks.make_image(tmp_path / "home.img", "64")


def test_the_collect_listing_keeps_the_other_assignments_rows(tmp_path):
    """Collecting the project after the quiz keeps the quiz's rows (the
    grading of both reads their refusals and claims from the one listing);
    the project's earlier rows are replaced."""
    import exchange_collect
    from exchange_collect import Row

    listing = tmp_path / "exchange_collected.csv"
    when = "2026-12-01 10:00:00.000000 UTC"
    exchange_collect.write_rows(listing, [
        Row("ada", f"ada+quiz+{when}+abc", "collected", when, when),
        Row("ada", f"ada+project+{when}+abc", "collected", when, when),
        Row("(unknown)", "stray-file", "refused", note="not a submission's name")])
    kept = exchange_collect.other_assignments(listing, "project")
    assert [r.submission for r in kept] == [f"ada+quiz+{when}+abc"]
    assert kept[0] == Row("ada", f"ada+quiz+{when}+abc", "collected", when, when)
