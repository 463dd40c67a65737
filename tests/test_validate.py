"""nbgrader validate: the masters pass every test, the student edition passes none.

`nbgrader validate` exits 0 even when tests fail (nbgrader issue 1908). These
tests go through autograder/check/validate.py, which reads what nbgrader prints and
turns it into an exit code; the wrapper itself, and what `make check` shows a
student (a table of points per part), are tested here too.
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
RELEASE = ROOT / "release" / "lab"
VALIDATE = ROOT / "autograder" / "check" / "validate.py"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "autograder" / "testbed"))
import make_sample_class as msc  # noqa: E402
from autograder.check import validate  # noqa: E402
from autograder.run.rag_feedback import is_hidden, parts_of  # noqa: E402


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(VALIDATE), *args],
                          capture_output=True, text=True)


# the first and the last notebook test the wrapper; that every master's answers
# pass every test and every blank fails is graded for real on the sample class
# (tests/test_grading.py: ada_complete full marks, ben_blank none)
ENDS = [MASTERS[0], MASTERS[-1]]


@pytest.mark.parametrize("master", ENDS, ids=lambda p: p.name)
def test_master_solutions_pass_every_test(master):
    """With the solutions in, every visible and hidden test passes."""
    proc = run(str(master))
    assert proc.returncode == 0, proc.stdout
    assert "Success! Your notebook passes all the tests." in proc.stdout
    assert "FAILED" not in proc.stdout


@pytest.mark.parametrize("master", ENDS, ids=lambda p: p.name)
def test_release_blanks_fail_every_test(master):
    """In the student edition every graded test fails until the student works."""
    proc = run(str(ROOT / "release" / "lab" / master.name), "--invert")
    assert proc.returncode == 0, proc.stdout
    assert "Success! The notebook does not pass any tests." in proc.stdout


def test_a_failing_notebook_gives_a_failing_exit_code():
    """Where nbgrader would exit 0, the wrapper exits 1 and says which
    notebook; `--nb 01` picks it out of release/ by number (make check NB=01)."""
    blank = ROOT / "release" / "lab" / MASTERS[0].name
    proc = run(str(ROOT / "release"), "--nb", MASTERS[0].name[:2])
    assert proc.returncode == 1
    assert f"FAIL {blank}" in proc.stdout
    assert len(re.findall(r"^(FAIL|ok  ) ", proc.stdout, re.M)) == 1, (
        f"--nb checked more than one notebook:\n{proc.stdout}")
    assert "VALIDATION FAILED" in proc.stdout
    assert proc.stdout.strip().endswith("0 passed, 1 failed")


def test_a_missing_notebook_is_an_error():
    """A typo in the path is reported, not validated as empty."""
    proc = run("no/such/notebook.ipynb")
    assert proc.returncode == 2
    assert "notebooks not found: no/such/notebook.ipynb" in proc.stderr


def student_copy(master: Path, folder: Path, answered: set[str] | None = None) -> Path:
    """The student edition of `master` with the master's answers written into
    the solution cells named in `answered` (all of them when None)."""
    nb = nbformat.read(RELEASE / master.name, as_version=4)
    msc.fill(nb, msc.master_answers(master), only=answered)
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / master.name)
    return folder / master.name


def rows_of(stdout: str, stem: str) -> dict[str, list[str]]:
    """Part name -> the table row's columns after the part, for one notebook."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(rf"\s+{re.escape(stem)}\s+(Part \w+|before Part \w+|Question \d+)"
                     r"\s+(.*)", line)
        if m:
            rows[m.group(1)] = m.group(2).split(None, 3)
    return rows


def test_check_before_make_lab_says_to_run_it(tmp_path):
    """No my-work/lab yet, or nothing in it: the answer is `make lab`, not a path error."""
    for folder in (tmp_path / "my-work" / "lab", tmp_path):
        proc = run(str(folder))
        assert proc.returncode == 2
        assert f"no notebooks in {folder} yet: run `make lab` first" in proc.stderr
        assert "notebooks not found" not in proc.stderr


# two notebooks are enough to test the check itself; that every master's
# answers pass is tested above, and tests/test_conventions.py rules out the
# shown values that once made finished copies fail
@pytest.mark.parametrize("master", ENDS, ids=lambda p: p.name)
def test_a_finished_student_copy_passes_check(master, tmp_path):
    """The release with the master's answers in it: exit 0, every part ok, every
    visible point earned, hidden points left to grading."""
    copy = student_copy(master, tmp_path / "lab")
    proc = run(str(tmp_path / "lab"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"ok   {copy}" in proc.stdout
    rows = rows_of(proc.stdout, master.stem)
    assert [p.name for p in parts_of(nbformat.read(copy, as_version=4))] == list(rows)
    for part, (result, visible, hidden, first) in rows.items():
        earned, possible = visible.split("/")
        assert (result, earned, first) == ("ok", possible, "-"), f"{part}: {proc.stdout}"
        assert hidden == "-" or hidden.startswith("?/"), f"{part}: {proc.stdout}"


def test_check_explains_itself_and_scores_each_part(tmp_path):
    """Half-done work: the table shows the answered part passing and the first
    unanswered one failing with its error; the text says what is not checked."""
    master = MASTERS[0]
    nb = nbformat.read(RELEASE / master.name, as_version=4)
    parts = [p for p in parts_of(nb) if p.answers]
    done, todo = parts[0], parts[1]
    answered = {nb.cells[i].metadata["nbgrader"]["grade_id"] for i in done.answers}
    copy = student_copy(master, tmp_path / "lab", answered)
    proc = run(str(copy))
    assert proc.returncode == 1
    out = proc.stdout
    assert "This runs the visible tests" in out and '"(hidden)"' in out
    assert "VALIDATION FAILED" in out and "The following cell failed" not in out
    rows = rows_of(out, master.stem)
    result, visible, _, first = rows[done.name]
    assert result == "ok" and visible.split("/")[0] == visible.split("/")[1], out
    result, visible, _, first = rows[todo.name]
    assert result == "FAIL" and visible.startswith("0/"), out
    assert "NotImplementedError" in first, out
    hidden = [nb.cells[i] for p in parts for i in p.tests if is_hidden(nb.cells[i])]
    if hidden:
        assert "hidden tests, added at grading:" in out
    details = run(str(copy), "--details").stdout
    assert "The following cell failed" in details


# ------------------------------------------- one notebook, by number or name

@pytest.mark.parametrize("nb, want", [
    ("07", "lab/07_measuring"), ("7", "lab/07_measuring"),
    ("07_measuring", "lab/07_measuring"), ("07_measuring.ipynb", "lab/07_measuring"),
    ("measuring", "lab/07_measuring"), ("my-work/lab/07_measuring.ipynb", "lab/07_measuring"),
    ("quiz", "quiz/quiz"), ("09", "lab/09_project"),
    # a whole name wins over a name after a number: the project, not 09
    ("project", "project/project"),
])
def test_nb_names_one_notebook(nb, want):
    found = [Path(f"my-work/{name}.ipynb") for name in
             ("lab/07_measuring", "lab/09_project", "lab/10_more", "quiz/quiz",
              "project/project")]
    assert validate.pick(found, nb) == [Path(f"my-work/{want}.ipynb")]


def test_nb_that_names_nothing_lists_the_notebooks(tmp_path):
    """A typo is an error naming what there is, before anything runs."""
    for name in ("lab/07_measuring", "quiz/quiz"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.ipynb").write_text("{}")
    proc = run(str(tmp_path), "--nb", "7_measuring")
    assert proc.returncode == 2, proc.stdout
    assert "no notebook '7_measuring' here; there are: 07_measuring, quiz" in proc.stderr
    assert validate.pick([tmp_path / "lab/07_measuring.ipynb"], "0") == []


def test_nb_looks_into_assignments_but_not_checkpoints(tmp_path):
    """my-work/ (the repository's make check) holds assignment folders; a
    JupyterLab checkpoint copy of the notebook is never the one checked."""
    for name in ("lab/07_measuring", "lab/.ipynb_checkpoints/07_measuring-checkpoint",
                 "quiz/quiz"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.ipynb").write_text("{}")
    want = [tmp_path / "lab/07_measuring.ipynb"]
    assert validate.find_notebooks([tmp_path], "07") == (want, [])
    assert validate.find_notebooks([tmp_path / "lab", tmp_path / "quiz"], "7") == (want, [])
    # without --nb a folder is checked whole, its own notebooks only
    assert validate.find_notebooks([tmp_path / "lab"]) == (want, [])


# --------------------------------------------------- what make check prints

@pytest.fixture(scope="module")
def blank_quiz_and_project(tmp_path_factory):
    """`make check` on the blank quiz and on the project before its corpus
    exists: (the finished process, the two copies)."""
    work = tmp_path_factory.mktemp("work")
    copies = []
    for name in ("quiz", "project"):
        (work / name).mkdir()
        shutil.copy(ROOT / "release" / name / f"{name}.ipynb", work / name)
        copies.append(work / name / f"{name}.ipynb")
    return run(str(work / "quiz"), str(work / "project")), copies


def test_the_banner_comes_once_and_counts_parts(blank_quiz_and_project):
    proc, copies = blank_quiz_and_project
    assert proc.returncode == 1, proc.stdout + proc.stderr
    parts = [len(parts_of(nbformat.read(c, as_version=4))) for c in copies]
    assert proc.stdout.count("VALIDATION FAILED") == 1, proc.stdout
    assert f"VALIDATION FAILED on {sum(parts)} parts in 2 notebooks" in proc.stdout
    for copy, n in zip(copies, parts):
        assert f"FAIL {copy}\n{n} of {n} parts fail a visible test" in proc.stdout
    assert "CELL(S)" not in proc.stdout, "nbgrader's count of cells is shown"


def test_an_untouched_part_shows_its_hidden_points_as_unknown(blank_quiz_and_project):
    """Nothing answered: the hidden smoke call fails, but the points are
    decided at grading, so `?` and not 0."""
    proc, copies = blank_quiz_and_project
    rows = rows_of(proc.stdout, "quiz")
    assert len(rows) == 10, proc.stdout
    for part, (result, visible, hidden, first) in rows.items():
        assert (result, hidden) == ("FAIL", "?/1"), f"{part}: {proc.stdout}"
        assert first == "not answered yet (NotImplementedError)", proc.stdout


def test_a_missing_corpus_is_reported_once_as_the_cause(blank_quiz_and_project):
    """The setup cell's own message, not the NameErrors that follow it."""
    proc, copies = blank_quiz_and_project
    out = proc.stdout
    corpus = copies[1].parent / "corpus"
    assert ("the setup cell failed, and the checks that need what it defines "
            f"fail with it:\n    FileNotFoundError: {corpus}: folder not found; "
            "put documents.json") in out, out
    assert "NameError" not in out, out
    rows = rows_of(out, "project")
    assert len(rows) == 4, out
    blamed = [part for part, (*_, first) in rows.items()
              if first.endswith(validate.SETUP_FAILED)]
    assert len(blamed) >= 2, f"no part blames the setup: {rows}"
    assert all(hidden.startswith("?/") for _, _, hidden, _ in rows.values()), rows


def as_if_run(nb: nbformat.NotebookNode, errors: dict[str, str]) -> nbformat.NotebookNode:
    """`nb` as if run, without a kernel: every code cell executed, the cells
    whose grade_id is a key of `errors` raising that error."""
    for count, cell in enumerate(nb.cells, 1):
        if cell.cell_type == "code":
            cell.execution_count = count
            cell.outputs = []
            error = errors.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
            if error:
                cell.outputs = [nbformat.v4.new_output(
                    "error", ename=error, evalue="", traceback=[])]
    return nb


def test_when_only_written_answers_are_empty_it_says_so(capsys):
    """Every test passes and the memo cells still hold nbgrader's stub."""
    ran = as_if_run(nbformat.read(ROOT / "release" / "project" / "project.ipynb",
                                  as_version=4), {})
    written = [p.name for p in parts_of(ran)
               if any(ran.cells[i].cell_type == "markdown" for i in p.tests)]
    assert len(written) >= 2, "the project has too few written answers to test with"
    rows = validate.report_notebook(Path("my-work/project/project.ipynb"), True,
                                    validate.PASSED, ran, False, False)
    out = capsys.readouterr().out
    assert f"Only the written answers are still empty: {', '.join(written)} (" in out, out
    assert all(row["ok"] for row in rows)
    # a memo written is no longer named
    memo = next(i for i, c in enumerate(ran.cells) if c.cell_type == "markdown"
                and c.metadata.get("nbgrader", {}).get("solution"))
    ran.cells[memo].source = "My chunker keeps paragraphs whole."
    still = [r["part"] for r in validate.part_rows(ran) if r["written"]["empty"]]
    assert still == [p.name for p in parts_of(ran)
                     if memo not in p.tests and p.name in written], still


def test_an_answered_part_keeps_a_failing_hidden_call_at_zero():
    """Once the stub is replaced, a hidden cell whose smoke call fails will
    fail at grading too: 0, not `?`."""
    master = MASTERS[0]
    nb = nbformat.read(RELEASE / master.name, as_version=4)
    msc.fill(nb, msc.master_answers(master))
    part = next(p for p in parts_of(nb) if any(is_hidden(nb.cells[i]) for i in p.tests))
    hidden = next(nb.cells[i].metadata["nbgrader"]["grade_id"] for i in part.tests
                  if is_hidden(nb.cells[i]))
    row = next(r for r in validate.part_rows(as_if_run(nb, {hidden: "TypeError"}))
               if r["part"] == part.name)
    assert not row["ok"] and row["first"] == "TypeError", row
    assert row["hidden"]["ran"] and row["hidden"]["earned"] == 0, row
    assert validate.table(Path(master.name), [row]).splitlines()[1].split()[5] \
        == f"0/{row['hidden']['possible']:g}"



def test_a_function_that_runs_ragkits_own_piece_fails_the_check(tmp_path):
    """The check fails a part whose function hands its work to ragkit's
    twin (here 02's split_into_sentences calling ragkit.text's
    split_sentences), with the message the grader gives, before the hand-in;
    the same copy with its own answer passes, and the other parts keep
    their points."""
    master = next(m for m in MASTERS if m.name.startswith("02"))
    nb = nbformat.read(RELEASE / master.name, as_version=4)
    msc.fill(nb, msc.master_answers(master))
    (tmp_path / "own").mkdir()
    nbformat.write(nb, tmp_path / "own" / master.name)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")
                  and "def split_into_sentences" in c.source)
    answer.source = ("from ragkit.text import split_sentences as cut\n\n\n"
                     "def split_into_sentences(text):\n    return cut(text)\n")
    (tmp_path / "twin").mkdir()
    nbformat.write(nb, tmp_path / "twin" / master.name)

    own = run(str(tmp_path / "own"))
    assert own.returncode == 0, own.stdout
    twin = run(str(tmp_path / "twin"))
    assert twin.returncode == 1, twin.stdout
    failing = [line for line in twin.stdout.splitlines() if " FAIL " in line]
    assert len(failing) == 1, twin.stdout
    assert "DelegatedToPackage: split_into_sentences runs ragkit's split_sentences" \
        in failing[0], failing


# ---- the core edition (make build CORE=1): worked parts carry no points

def core_copy(stem: str) -> nbformat.NotebookNode:
    from autograder.scoring import editions
    return editions.core_edition(nbformat.read(ROOT / "source" / "lab" / f"{stem}.ipynb",
                                               as_version=4))


def worked_check_above_first_graded(nb) -> tuple[str, str]:
    """(grade_id, part name) of a worked part's check cell that sits above
    the first graded cell."""
    first = min(i for p in parts_of(nb) for i in p.tests)
    part = None
    for index, cell in enumerate(nb.cells[:first]):
        if cell.cell_type == "markdown":
            found = re.search(r"^#+\s+(Part \w+) \(0 points\)", cell.source, re.M)
            part = found.group(1) if found else part
        elif part and cell.metadata.get("nbgrader", {}).get("grade_id"):
            return cell.metadata["nbgrader"]["grade_id"], part
    raise AssertionError("no worked check above the first graded part")


def test_a_failing_worked_cell_is_not_called_the_setup(capsys):
    """06 in the core edition: a worked check above Part F raises; it is
    named as that worked part, never as the setup cell, and Part F's
    NameError points at it."""
    nb = core_copy("06_agentic")
    worked_id, worked = worked_check_above_first_graded(nb)
    graded = parts_of(nb)[0]
    visible = next(nb.cells[i].metadata["nbgrader"]["grade_id"] for i in graded.tests
                   if not is_hidden(nb.cells[i]))
    ran = as_if_run(nb, {worked_id: "KeyError", visible: "NameError"})
    assert validate.setup_failure(ran) is None
    rows = validate.report_notebook(Path("my-work/lab/06_agentic.ipynb"), False,
                                    "VALIDATION FAILED on 1 cell", ran, False, False)
    out = capsys.readouterr().out
    assert "setup cell failed" not in out, out
    assert f"{worked}, worked for you (no points), raised an error" in out, out
    assert rows[0]["first"] == validate.WORKED_FAILED.format(part=worked), rows


def test_success_never_comes_with_a_setup_failure(capsys):
    """Every graded check passes while a worked cell fails: Success, and the
    worked part is named, not the setup."""
    nb = core_copy("06_agentic")
    worked_id, worked = worked_check_above_first_graded(nb)
    ran = as_if_run(nb, {worked_id: "KeyError"})
    rows = validate.report_notebook(Path("my-work/lab/06_agentic.ipynb"), True,
                                    validate.PASSED, ran, False, False)
    out = capsys.readouterr().out
    assert validate.PASSED in out and "setup cell failed" not in out, out
    assert all(row["ok"] for row in rows) and f"{worked}, worked for you" in out


def test_a_notebook_with_no_graded_part_prints_no_empty_table(capsys):
    """01 in the core edition grades nothing: a sentence, not a bare header."""
    ran = as_if_run(core_copy("01_why_retrieval"), {})
    rows = validate.report_notebook(Path("my-work/lab/01_why_retrieval.ipynb"), True,
                                    validate.PASSED, ran, False, False)
    out = capsys.readouterr().out
    assert rows == [] and validate.NOTHING_GRADED in out, out
    assert "first failing check" not in out, out


def test_a_failing_setup_cell_is_still_the_setup():
    """A code cell above every part heading that fails is the setup."""
    nb = core_copy("06_agentic")
    setup = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    ran = as_if_run(nb, {})
    ran.cells[setup].outputs = [nbformat.v4.new_output(
        "error", ename="FileNotFoundError", evalue="corpus", traceback=[])]
    assert validate.setup_failure(ran).startswith("FileNotFoundError")
    assert validate.worked_failures(ran) == []


def test_check_runs_only_down_to_the_last_graded_cell():
    """What follows the last graded or answer cell cannot change a result,
    so make check does not run it: in 03 that is the nprobe sweep and the
    FAISS section; a notebook with no graded cell runs whole."""
    nb = nbformat.read(RELEASE / "03_indexing.ipynb", as_version=4)
    marked = [i for i, c in enumerate(nb.cells)
              if c.metadata.get("nbgrader", {}).get("grade")
              or c.metadata.get("nbgrader", {}).get("solution")]
    cut = validate.up_to_the_last_graded_cell(nbformat.from_dict(nb))
    assert len(cut.cells) == marked[-1] + 1 < len(nb.cells)
    dropped = "\n".join(c.source for c in nb.cells[len(cut.cells):])
    assert "import faiss" in dropped
    assert not any(c.metadata.get("nbgrader", {}).get(key)
                   for c in nb.cells[len(cut.cells):] for key in ("grade", "solution"))
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1") for _ in range(3)])
    assert len(validate.up_to_the_last_graded_cell(plain).cells) == 3
