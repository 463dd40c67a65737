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
    proc = run_grader(subs, out, "--jobs", "2", "--no-report")
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
    from autograder.commands.grade import ROOT
    from autograder.pipeline.run_student import sandbox

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
    proc = run_grader(subs, out, "--timeout", "5", "--no-report")
    assert "graded 1 of 1 students" in proc.stdout, proc.stdout + proc.stderr
    scores = pd.read_csv(out / "scores.csv").set_index("notebook")["score"]
    first_task_points = sum(p for _, p, t in grade_cells(first) if t == 0)
    assert scores[first.name] <= total(first) - first_task_points
    for m in others:
        assert scores[m.name] == total(m)


def test_a_project_corpus_copied_from_the_master_is_reported(tmp_path):
    """The master's own corpus is never released; a submission holding any
    of its files is listed for a human, and a student's own corpus is not."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from autograder.scoring import release_check

    root = Path(__file__).resolve().parents[1]
    master = release_check.own_files(root / "source" / "project")
    assert set(master) == {"corpus/documents.json", "corpus/questions.json",
                           "corpus/unanswerable.json"}
    own = SAMPLE / "ada_complete" / "project"
    assert release_check.copied_from_master(own, master) == []
    copy = tmp_path / "project"
    shutil.copytree(own, copy)
    shutil.copy(root / "source" / "project" / "corpus" / "documents.json",
                copy / "corpus" / "documents.json")
    (found,) = release_check.copied_from_master(copy, master)
    assert found.startswith("corpus/: 1 file(s) identical to the master's own")


# --- links, odd student ids, a crash, spreadsheet formulas -------------------

HOSTILE = Path(__file__).resolve().parents[1] / "autograder" / "testbed" / "hostile"
COURSE = Path(__file__).resolve().parents[1] / "autograder" / "commands" / "course.py"
FORMULA = '=HYPERLINK("evil.example?leak","click me")'  # a file name: no slash


def hostile_expected() -> dict[str, tuple[float, list[str]]]:
    """case -> (score, problems.csv lines) of autograder/testbed/hostile/expected.csv."""
    import csv

    with (HOSTILE / "expected.csv").open() as fh:
        return {r["case"]: (float(r["score"]), sorted(filter(None, r["problems"].split(" | "))))
                for r in csv.DictReader(fh)}


def test_linked_student_and_assignment_folders_are_refused(tmp_path):
    """`mallory -> source/` and `eve/lab -> source/lab` would hand in the
    masters (full marks); neither is followed: each scores 0 with one line."""
    from autograder.intake import intake

    subs = tmp_path / "subs"
    subs.mkdir()
    root = Path(__file__).resolve().parents[1]
    (subs / "mallory").symlink_to(root / "source", target_is_directory=True)
    (subs / "eve").mkdir()
    (subs / "eve" / "lab").symlink_to(root / "source" / "lab", target_is_directory=True)
    first = MASTERS[0]
    out = tmp_path / "out"
    proc = run_grader(subs, out, "--notebook", first.stem, "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "graded 2 of 2 students" in proc.stdout
    scores = pd.read_csv(out / "scores.csv").set_index("student")
    assert list(scores.index) == ["eve", "mallory"]
    assert (scores["score"] == 0).all() and (scores["notebook"] == first.name).all()
    assert (scores["max_score"] == total(first)).all()
    problems = pd.read_csv(out / "problems.csv")
    assert sorted(map(tuple, problems.values)) == [
        ("eve", intake.LINK_REFUSED), ("mallory", intake.LINK_REFUSED)]
    assert not (out / "feedback").exists() and not any((out / ".students").iterdir())


@pytest.fixture(scope="module")
def odd_class(tmp_path_factory):
    """course.py grade (the hostile assignment) on students whose ids collide
    with the grader's own names, folder names that are not student ids, one
    student whose grading raises, and a file name that is a formula."""
    tmp = tmp_path_factory.mktemp("odd")
    subs = tmp / "subs"
    subs.mkdir()
    valid = {"vic": "correct", "vic.log": "edit_tests", "vic.partial": "os_exit",
             "logs": "delete_tests", "feedback": "correct"}
    for student, case in valid.items():
        shutil.copytree(HOSTILE / "submissions" / case, subs / student)
    # a notebook named like a formula beside feedback's correct one
    nbformat.write(nbformat.v4.new_notebook(),
                   subs / "feedback" / "hostile" / f"{FORMULA}.ipynb")
    # a grade_id that is a list makes the grader raise for this student only
    shutil.copytree(HOSTILE / "submissions" / "correct", subs / "crash")
    path = subs / "crash" / "hostile" / "tiny.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    cell.metadata.nbgrader.grade_id = ["tiny_a"]
    nbformat.write(nb, path)
    refused = [".students", 'bad"<id>', "café", "a b", FORMULA, "x" * 65, "-rf"]
    for name in refused:
        shutil.copytree(HOSTILE / "submissions" / "correct", subs / name)
    out = tmp / "out"
    proc = subprocess.run([sys.executable, str(COURSE), "grade", "--submissions", str(subs),
                           "--out", str(out), "--source", str(HOSTILE / "source"),
                           "--jobs", "2", "--timeout", "20"],
                          capture_output=True, text=True)
    return {"proc": proc, "out": out, "valid": valid, "refused": refused}


def test_colliding_ids_keep_their_own_results(odd_class):
    """vic, vic.log, vic.partial, logs and feedback each get exactly their
    own score, problems, log and feedback."""
    out = odd_class["out"] / "hostile"
    want = hostile_expected()
    scores = pd.read_csv(out / "scores.csv", dtype={"student": str}
                         ).groupby("student")["score"].sum()
    problems = pd.read_csv(out / "problems.csv", keep_default_na=False)
    for student, case in odd_class["valid"].items():
        assert scores[student] == want[case][0], (student, odd_class["proc"].stdout)
        lines = sorted(problems.loc[problems.student == student, "problem"])
        extra = ["'" + f"{FORMULA}.ipynb: not part of the assignment, ignored"] \
            if student == "feedback" else []
        assert lines == sorted(want[case][1] + extra), student
        assert (out / "logs" / f"{student}.log").is_file()
        assert (out / "feedback" / student / "hostile" / "tiny.html").is_file()
    kept = sorted(p.name for p in (out / ".students").iterdir())
    assert kept == sorted([*odd_class["valid"], "crash"])
    assert not (out / ".partial").exists() or not any((out / ".partial").iterdir())


def test_a_crash_is_one_students_problem(odd_class):
    """The student whose grading raised gets one line and no score; the
    batch goes on, and the grade sheet still holds everyone else."""
    out = odd_class["out"]
    problems = pd.read_csv(out / "hostile" / "problems.csv", keep_default_na=False)
    assert list(problems.loc[problems.student == "crash", "problem"]) == [
        "(grader): grading failed: TypeError: unhashable type: 'list'"]
    assert "crash" not in set(pd.read_csv(out / "hostile" / "scores.csv")["student"])
    sheet = pd.read_csv(out / "grade_sheet.csv", dtype={"student": str}).set_index("student")
    assert sorted(sheet.index) == sorted(odd_class["valid"])
    want = hostile_expected()
    for student, case in odd_class["valid"].items():
        assert sheet.loc[student, "hostile"] == want[case][0]


def test_folder_names_that_are_not_ids_are_refused_and_shown_escaped(odd_class):
    """Quotes, <>, spaces, non-ASCII, a leading dot or dash, a formula, 65
    characters: not graded, one escaped line each, in problems.csv and the
    printed summary; the exit status says a student has no grade."""
    from autograder.intake import intake

    proc, out = odd_class["proc"], odd_class["out"] / "hostile"
    assert proc.returncode == 1, proc.stdout + proc.stderr
    problems = pd.read_csv(out / "problems.csv", keep_default_na=False)
    scores = pd.read_csv(out / "scores.csv", dtype={"student": str})
    for name in odd_class["refused"]:
        shown = intake.shown_id(name)
        assert shown.isascii() and not intake.valid_id(shown)
        assert not any(ch in shown for ch in "\"'<> ")
        assert list(problems.loc[problems.student == shown, "problem"]) == [intake.ID_REFUSED]
        assert f"  ! {shown}: {intake.ID_REFUSED}" in proc.stdout
        assert shown not in set(scores["student"])
    assert intake.shown_id('bad"<id>') == "bad\\x22\\x3cid\\x3e"
    assert intake.shown_id(".students") == "\\x2estudents"
    assert intake.shown_id("x" * 65) == "x" * 65
    assert f"graded {len(odd_class['valid'])} of " \
           f"{len(odd_class['valid']) + 1 + len(odd_class['refused'])} students" in proc.stdout
    # nothing was written under a refused name anywhere in --out
    names = {p.name for p in odd_class["out"].rglob("*")}
    assert not names & ({*odd_class["refused"], f"{FORMULA}.log"} - {".students"})


def test_no_csv_cell_is_a_spreadsheet_formula(odd_class):
    """Every CSV under --out (scores, problems, grades, report/, the grade
    sheet, nbgrader's export in formgrader/) read back: a text cell never
    starts with = + - @ or a tab or CR; the formula file name is there,
    neutralised; numbers are still numbers."""
    import csv

    from autograder.scoring import safe_csv

    files = sorted(odd_class["out"].rglob("*.csv"))
    names = {str(p.relative_to(odd_class["out"])) for p in files}
    assert {"grade_sheet.csv", "formgrader/grades.csv", "hostile/scores.csv",
            "hostile/problems.csv", "hostile/grades.csv", "hostile/report/totals.csv",
            "hostile/report/tests.csv", "hostile/report/problems.csv"} <= names
    seen = []
    for path in files:
        if ".students" in path.parts:  # nbgrader's own export, kept for resuming
            continue
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh):
                for value in row:
                    seen.append(value)
                    assert not value.startswith(safe_csv.FORMULA_START) or \
                        safe_csv.PLAIN_NUMBER.fullmatch(value), (path, value)
    assert "'" + f"{FORMULA}.ipynb: not part of the assignment, ignored" in seen
    sheet = pd.read_csv(odd_class["out"] / "grade_sheet.csv")
    assert pd.api.types.is_numeric_dtype(sheet["hostile"])
    scores = pd.read_csv(odd_class["out"] / "hostile" / "scores.csv")
    assert pd.api.types.is_numeric_dtype(scores["score"])


def test_safe_csv_cells():
    """The one helper: formulas become text, numbers stay numbers."""
    from autograder.scoring import safe_csv

    cell = safe_csv.cell
    assert [cell(v) for v in ("=1+1", "+1+1", "@SUM(A1)", "\t=x", "\r=x", "-1+1",
                              "-inf", FORMULA)] == [
        "'=1+1", "'+1+1", "'@SUM(A1)", "'\t=x", "'\r=x", "'-1+1", "'-inf", "'" + FORMULA]
    assert [cell(v) for v in (-3.0, -3, "-3", "-0.5", "-1e3", "vic", "", None)] == [
        -3.0, -3, "-3", "-0.5", "-1e3", "vic", "", None]
    frame = pd.DataFrame({"student": ["=evil", "ok"], "score": [-1.5, 2.0]})
    got = safe_csv.neutralised(frame)
    assert list(got["student"]) == ["'=evil", "ok"] and list(got["score"]) == [-1.5, 2.0]


def replace_answer(nb, grade_id: str, source: str) -> None:
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    cell.source = source


def twin_submission(subs: Path, student: str, answers: dict[str, str]) -> None:
    """ada's notebook 05 with some of its answer cells replaced."""
    lab = copy_notebooks("ada_complete", [TWIN_NB], subs / student)
    nb = nbformat.read(lab / TWIN_NB, as_version=4)
    for grade_id, source in answers.items():
        replace_answer(nb, grade_id, source)
    nbformat.write(nb, lab / TWIN_NB)


TWIN_NB = "05_reranking.ipynb"


def test_calling_the_package_twin_scores_zero_and_is_named(tmp_path):
    """A task that asks to build a piece gives no points for calling ragkit's
    own: decided by what runs (the kernel's ragkit counts its calls,
    ragkit_watch.py), however the twin was reached; calling ragkit where the
    task says to stays fine (Part D).

    vera reaches the twins by importlib and getattr, as an attribute and
    under another name; wes by the routes that hid them from the call
    tracing used before: a thread started before the call, a reloaded
    module and a renamed code object, `ragkit.__file__` pointed elsewhere and
    tracing switched off; xia switches the counting off, which fails every
    test that calls her functions with a line of its own; yan calls ragkit's
    functions that give the same answers under other names (maxsim_many,
    rerank_vectors); zoe reaches them through copies of the package under
    other names: ragkit.reference.fresh(), a copy she loads by hand from
    ragkit's folder, and the kernel's private copy that the judge's swaps
    use."""
    subs = tmp_path / "subs"
    twin_submission(subs, "vera_delegates", {
        "nb05_token_vectors":
            "import importlib\n\n"
            "def token_vectors(text, dim=64):\n"
            "    package = importlib.import_module('ragkit.' + 'rerank')\n"
            "    return getattr(package, 'token_' + 'vectors')(text, dim).tolist()",
        "nb05_maxsim":
            "def maxsim(query_rows, passage_rows):\n"
            "    if not query_rows or not passage_rows:\n        return 0.0\n"
            "    return float(ragkit.rerank.maxsim(np.array(query_rows),\n"
            "                                      np.array(passage_rows)))",
        "nb05_maxsim_rerank":
            "from ragkit.rerank import rerank as the_real_thing\n\n"
            "def maxsim_rerank(query, ids, texts, dim=64):\n"
            "    return the_real_thing(query, ids, texts, dim)"})
    twin_submission(subs, "wes_hides", {
        "nb05_token_vectors":
            "import queue, threading\nimport ragkit.rerank\n\n"
            "_asks, _answers = queue.Queue(), queue.Queue()\n\n"
            "def _worker():\n    while True:\n        text, dim = _asks.get()\n"
            "        _answers.put(ragkit.rerank.token_vectors(text, dim).tolist())\n\n"
            "threading.Thread(target=_worker, daemon=True).start()\n\n"
            "def token_vectors(text, dim=64):\n"
            "    _asks.put((text, dim))\n    return _answers.get()",
        "nb05_maxsim":
            "import importlib, types\nimport ragkit.rerank\n\n"
            "_fresh_module = importlib.reload(ragkit.rerank)\n"
            "_helper = types.FunctionType(\n"
            "    _fresh_module.maxsim.__code__.replace(co_name='helper', co_filename='mine.py'),\n"
            "    _fresh_module.__dict__)\n\n"
            "def maxsim(query_rows, passage_rows):\n"
            "    if not query_rows or not passage_rows:\n        return 0.0\n"
            "    return float(_helper(np.array(query_rows), np.array(passage_rows)))",
        "nb05_maxsim_rerank":
            "import sys\nimport ragkit, ragkit.rerank\n\n"
            "ragkit.__file__ = '/nowhere/ragkit/__init__.py'\n\n"
            "def maxsim_rerank(query, ids, texts, dim=64):\n"
            "    sys.settrace(None)\n"
            "    return ragkit.rerank.rerank(query, ids, texts, dim)"})
    twin_submission(subs, "xia_unhooks", {
        "nb05_token_vectors":
            "import sys\nimport ragkit.rerank\n\n"
            "sys.modules['_ragkit_watch'].note = lambda name: None\n\n"
            "def token_vectors(text, dim=64):\n"
            "    return ragkit.rerank.token_vectors(text, dim).tolist()"})
    twin_submission(subs, "yan_aliases", {
        "nb05_token_vectors":
            "def token_vectors(text, dim=64):\n    raise NotImplementedError()",
        "nb05_maxsim":
            "from ragkit.rerank import maxsim_many\n\n"
            "def maxsim(query_rows, passage_rows):\n"
            "    if not query_rows or not passage_rows:\n        return 0.0\n"
            "    return float(maxsim_many(np.array(query_rows), [np.array(passage_rows)])[0])",
        "nb05_maxsim_rerank":
            "import ragkit.rerank\n\n"
            "def maxsim_rerank(query, ids, texts, dim=64):\n"
            "    rows = {i: ragkit.rerank.token_vectors(t, dim) for i, t in zip(ids, texts)}\n"
            "    return ragkit.rerank.rerank_vectors(ragkit.rerank.token_vectors(query, dim),\n"
            "                                        ids, rows)"})
    twin_submission(subs, "zoe_copies", {
        "nb05_token_vectors":
            "import ragkit.reference\n\n"
            "def token_vectors(text, dim=64):\n"
            "    return ragkit.reference.fresh().rerank.token_vectors(text, dim).tolist()",
        "nb05_maxsim":
            "import importlib.util, os, sys\nimport ragkit\n\n"
            "_home = os.path.dirname(ragkit.__file__)\n"
            "_spec = importlib.util.spec_from_file_location(\n"
            "    'my_own_kit', os.path.join(_home, '__init__.py'),\n"
            "    submodule_search_locations=[_home])\n"
            "_kit = importlib.util.module_from_spec(_spec)\n"
            "sys.modules['my_own_kit'] = _kit\n"
            "_spec.loader.exec_module(_kit)\n\n"
            "def maxsim(query_rows, passage_rows):\n"
            "    if not query_rows or not passage_rows:\n        return 0.0\n"
            "    return float(_kit.rerank.maxsim(np.array(query_rows), np.array(passage_rows)))",
        "nb05_maxsim_rerank":
            "import sys\n\n"
            "def maxsim_rerank(query, ids, texts, dim=64):\n"
            "    private = sys.modules['_rag_judge']._reference_function\n"
            "    return private('ragkit.rerank:rerank')(query, ids, texts, dim)"})
    out = tmp_path / "out"
    proc = run_grader(subs, out, "--notebook", "05_reranking", "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    master = next(m for m in MASTERS if m.name == TWIN_NB)
    cells = grade_cells(master)
    lost = {gid for gid, _, _ in cells
            if gid.split("_", 2)[-1] in ("token_vectors", "maxsim", "maxsim_rerank")}
    assert len(lost) == 6
    kept = sum(p for gid, p, _ in cells if gid not in lost)
    scores = pd.read_csv(out / "scores.csv").set_index("student")
    problems = pd.read_csv(out / "problems.csv", keep_default_na=False)

    def cells_named(student: str, phrase: str) -> set[str]:
        """The cells of the student's problem lines that say `phrase`."""
        lines = problems.loc[problems.student == student, "problem"]
        return {line.split("'")[1] for line in lines if phrase in line}

    for student in ("vera_delegates", "wes_hides", "zoe_copies"):
        assert float(scores.loc[student, "score"]) == kept, student
        assert cells_named(student, "ragkit's own twin") == lost, student
    # yan left Part A blank and reached the other two parts' answers through
    # ragkit functions of other names (twins.TWINS)
    assert float(scores.loc["yan_aliases", "score"]) == kept
    assert cells_named("yan_aliases", "ragkit's own twin") == {
        gid for gid in lost if "token_vectors" not in gid}
    page = (out / "feedback" / "yan_aliases" / "lab" / "05_reranking.html").read_text()
    assert "maxsim runs ragkit&#x27;s maxsim_many" in page or \
        "maxsim runs ragkit's maxsim_many" in page, "the feedback names the function that ran"
    off = cells_named("xia_unhooks", "counting of ragkit's calls switched off")
    assert {gid for gid in lost if "token_vectors" in gid} <= off, off
    assert float(scores.loc["xia_unhooks", "score"]) < kept


def test_a_redefined_test_helper_is_named_and_an_import_of_the_same_is_not():
    """A cell of the student's that rebinds a name the tests read from the
    master's locked cells (here the project's `evaluate`, which its visible
    test of Part B calls) is named in problems.csv; importing the very same
    object again, or binding a task's own name, is not."""
    from autograder.scoring import release_check

    root = Path(__file__).resolve().parents[1]
    helpers = release_check.test_helpers(root / "source" / "project" / "project.ipynb")
    assert {"evaluate", "fresh", "QUESTIONS"} <= set(helpers)
    nb = nbformat.read(root / "release" / "project" / "project.ipynb", as_version=4)
    task = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")
                and c.cell_type == "code")
    task.source += ("\nfrom ragkit.retrieval import evaluate as _e\nimport math\n"
                    "def evaluate(*args, **kw):\n    return {}\n")
    nb.cells.append(nbformat.v4.new_code_cell("%matplotlib inline\nQUESTIONS = QUESTIONS[:1]"))
    found = release_check.redefined(nb, helpers)
    gid = task.metadata["nbgrader"]["grade_id"]
    assert found == [(gid, "evaluate"), (str(len(nb.cells)), "QUESTIONS")]
