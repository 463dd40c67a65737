"""hub/hubctl.py's checks: each bad input stops with a message that names
the problem and says what to do (no hub is started here; tests/test_hub.py
runs one)."""
from __future__ import annotations

import json
import os
import secrets
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


def test_a_new_exchange_gets_nbgraders_modes_and_a_drifted_one_stops(tmp_path):
    root = tmp_path / "exchange"
    hubctl.check_exchange(root)
    assert root.stat().st_mode & 0o7777 == 0o777
    course = root / hubctl.COURSE_ID
    for part, mode in (("", 0o755), ("outbound", 0o755), ("inbound", 0o2733),
                       ("feedback", 0o711)):
        (course / part).mkdir(exist_ok=True)
        (course / part).chmod(mode)
    if os.geteuid() == 0:  # the course's folders are root's, as make release leaves them
        hubctl.check_exchange(root)
    (course / "inbound").chmod(0o777)  # drifted: every student could list the others
    with pytest.raises(hubctl.HubProblem) as err:
        hubctl.check_exchange(root)
    message = str(err.value)
    assert f"{course / 'inbound'} is 777, nbgrader wants 2733" in message
    assert f"chmod 2733 {course / 'inbound'}" in message


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
