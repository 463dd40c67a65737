"""grade.py --scheduler: every student a task on a Dask cluster.

A LocalCluster of two worker processes grades a few students of the hostile
class; scores, problems and the export must equal a local run exactly.
"""
import subprocess
import sys

import distributed
import pandas as pd

from tests.test_hostile import FLAGS, HOSTILE
from tests.test_grading import GRADE

CASES = ["correct", "os_exit"]


def run(subs, out, *extra):
    return subprocess.run([sys.executable, str(GRADE), "--submissions", str(subs),
                           "--out", str(out), *FLAGS, "--no-report", *extra],
                          capture_output=True, text=True, timeout=1800)


def test_dask_grades_equal_local_grades(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for case in CASES:
        subprocess.run(["cp", "-r", str(HOSTILE / "submissions" / case),
                        str(subs / case)], check=True)
    local = run(subs, tmp_path / "local")
    assert local.returncode == 0, local.stdout + local.stderr
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run(subs, tmp_path / "dask", "--scheduler", cluster.scheduler_address)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    for name in ("scores.csv", "problems.csv"):
        a = pd.read_csv(tmp_path / "local" / name).sort_values(["student"]).reset_index(drop=True)
        b = pd.read_csv(tmp_path / "dask" / name).sort_values(["student"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)
    keep = ["student_id", "raw_score", "score", "max_score"]
    a = pd.read_csv(tmp_path / "local" / "grades.csv")[keep]
    b = pd.read_csv(tmp_path / "dask" / "grades.csv")[keep]
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
