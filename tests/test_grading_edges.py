"""The grader on broken, hostile and misplaced input, run for real.

Small classes of one or two students, built from the sample class, so these
run beside tests/test_grading.py (the whole sample class) on the other core.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from tests.test_grading import MASTERS, SAMPLE, grade_cells, run_grader, total


def test_refuses_an_output_folder_it_did_not_make(tmp_path):
    """A folder with someone else's files is never wiped."""
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = run_grader(SAMPLE, out)
    assert proc.returncode != 0
    assert "was not made by this script" in proc.stderr + proc.stdout
    assert (out / "notes.txt").read_text() == "mine"


def test_refuses_output_inside_the_submissions(tmp_path):
    """Results may not be written among the submissions."""
    subs = tmp_path / "subs"
    shutil.copytree(SAMPLE / "ben_blank", subs / "ben_blank")
    proc = run_grader(subs, subs / "results")
    assert proc.returncode != 0
    assert "--out must lie outside --submissions" in proc.stderr + proc.stdout


def copy_notebooks(student: str, names: list[str], to: Path) -> Path:
    """A submission holding only some of a sample student's notebooks."""
    folder = to / "lab"
    folder.mkdir(parents=True)
    for name in names:
        shutil.copy(SAMPLE / student / "lab" / name, folder / name)
    return folder


def test_a_broken_submission_does_not_stop_the_class(tmp_path):
    """Unreadable JSON, a deleted test and a retyped cell are reported; all are graded."""
    subs = tmp_path / "subs"
    first, second = MASTERS[0].name, MASTERS[-1].name
    # two notebooks each keep the class small; the others are reported missing
    gus = copy_notebooks("ada_complete", [first, second], subs / "gus_broken")
    (gus / first).write_text("{ this is not json")
    nb = nbformat.read(gus / second, as_version=4)
    deleted = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    nb.cells.remove(deleted)
    nbformat.write(nb, gus / second)
    # a second student turns an answer cell into markdown (nbgrader issue 1941)
    ivy = copy_notebooks("ada_complete", [first], subs / "ivy_retyped")
    nb = nbformat.read(ivy / first, as_version=4)
    retyped = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    retyped.cell_type = "markdown"
    del retyped["outputs"], retyped["execution_count"]
    nbformat.write(nb, ivy / first)
    out = tmp_path / "out"
    proc = run_grader(subs, out, "--jobs", "2")
    assert "graded 2 of 2 students" in proc.stdout, proc.stdout + proc.stderr
    problems = pd.read_csv(out / "problems.csv")
    gus_problems = " | ".join(problems.loc[problems.student == "gus_broken", "problem"])
    assert "not a readable notebook" in gus_problems
    assert deleted.metadata["nbgrader"]["grade_id"] in gus_problems
    assert f"{MASTERS[1].name}: missing, scored 0" in gus_problems
    ivy_problems = " | ".join(problems.loc[problems.student == "ivy_retyped", "problem"])
    assert f"{retyped.metadata['nbgrader']['grade_id']!r} was turned into markdown" \
        in ivy_problems
    by_nb = pd.read_csv(out / "scores.csv").set_index(["student", "notebook"])["score"]
    # nbgrader turns the cell back into code, so ivy's answer still counts
    assert by_nb["ivy_retyped", first] == pytest.approx(total(MASTERS[0])), proc.stdout
    # gus's unreadable notebook scores 0, and his other work still counts:
    # nbgrader puts the deleted test back from the master and runs it
    assert by_nb["gus_broken", first] == 0
    assert by_nb["gus_broken", second] == pytest.approx(total(MASTERS[-1]))
    assert by_nb["gus_broken", MASTERS[1].name] == 0


def test_sandbox_blocks_writes_outside_the_course_and_the_network(tmp_path):
    """Under the grader's bubblewrap, code writes only its own scratch folder,
    sees none of the repository but ragkit/ and data/, and has no network."""
    from grade import ROOT, sandbox

    course = tmp_path / "work" / "mallory"
    course.mkdir(parents=True)
    (course / "handed_in.txt").write_text("mine")
    outside = tmp_path / "outside.txt"
    code = ("import pathlib, socket\n"
            f"here = pathlib.Path({str(course)!r})\n"
            "(here / 'ok.txt').write_text('fine')\n"
            "print('own folder', (here / 'ok.txt').read_text(), "
            "(here / 'handed_in.txt').read_text())\n"
            # outside.txt lands in the sandbox's private /tmp, or nowhere
            f"pathlib.Path({str(outside)!r}).write_text('escaped')\n"
            f"repo = pathlib.Path({str(ROOT)!r})\n"
            "try:\n    (repo / 'ragkit' / 'x.txt').write_text('escaped')\n"
            "except OSError:\n    print('write blocked')\n"
            "print('sees', sorted(p.name for p in repo.iterdir()))\n"
            # a fresh network namespace has the loopback device and nothing else
            "names = sorted(n for _, n in socket.if_nameindex())\n"
            "print('network blocked' if names == ['lo'] else names)\n")
    proc = subprocess.run(sandbox([sys.executable, "-c", code], course),
                          capture_output=True, text=True, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "own folder fine mine" in proc.stdout
    # the working folder is scratch space: nothing written there reaches the disk
    assert not (course / "ok.txt").exists()
    assert not outside.exists() and not (ROOT / "ragkit" / "x.txt").exists()
    assert "write blocked" in proc.stdout and "network blocked" in proc.stdout
    visible = {".venv", "ragkit", "data"} & {p.name for p in ROOT.iterdir()}
    assert f"sees {sorted(visible)}" in proc.stdout


def test_an_endless_loop_costs_only_its_own_tests(tmp_path):
    """A solution that never returns is stopped; the rest of the work still counts."""
    subs = tmp_path / "subs"
    first, others = MASTERS[0], MASTERS[1:2]  # two notebooks keep it short
    copy_notebooks("ada_complete", [first.name, others[0].name], subs / "hal_loops")
    path = subs / "hal_loops" / "lab" / first.name
    nb = nbformat.read(path, as_version=4)
    task = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    header = task.source.splitlines()[0]  # the `def ...:` line of the first task
    assert header.startswith("def ")
    task.source = header + "\n    while True:\n        pass\n"
    nbformat.write(nb, path)
    out = tmp_path / "out"
    proc = run_grader(subs, out, "--timeout", "5")
    assert "graded 1 of 1 students" in proc.stdout, proc.stdout + proc.stderr
    scores = pd.read_csv(out / "scores.csv").set_index("notebook")["score"]
    first_task_points = sum(p for _, p, t in grade_cells(first) if t == 0)
    assert scores[first.name] <= total(first) - first_task_points
    for m in others:
        assert scores[m.name] == total(m)


def test_a_project_corpus_copied_from_the_master_is_reported(tmp_path):
    """The master's own corpus is never released; a submission holding any
    of its files is listed for a human, and a student's own corpus is not."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "autograder"))
    import grade

    root = Path(__file__).resolve().parents[1]
    master = grade.own_files(root / "source" / "project")
    assert set(master) == {"corpus/documents.json", "corpus/questions.json",
                           "corpus/unanswerable.json"}
    own = SAMPLE / "ada_complete" / "project"
    assert grade.copied_from_master(own, master) == []
    copy = tmp_path / "project"
    shutil.copytree(own, copy)
    shutil.copy(root / "source" / "project" / "corpus" / "documents.json",
                copy / "corpus" / "documents.json")
    (found,) = grade.copied_from_master(copy, master)
    assert found.startswith("corpus/: 1 file(s) identical to the master's own")
