"""Write the sample class: five submissions of the lab that the grader must score.

    python autograder/make_sample_class.py

Each student starts from the student edition in release/lab and changes it the
way a real student might. The result is committed under autograder/sample_class/
and graded by `make course`; tests/test_grading.py checks every score.

    ada_complete     every task answered with the master's solution
    ben_blank        the release, untouched
    cai_partial      only the first two tasks of the first notebook answered
    dee_tampered     first notebook complete; second left blank, but every
                     graded test cell in it rewritten to `pass`
    eli_alternative  every task answered with code written differently from the
                     master (autograder/alternatives/NN_topic.py)

Rebuild it after changing a master (`make sample-class`); a test fails when it
is stale.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
ALTERNATIVES = HERE / "alternatives"
ASSIGNMENT = "lab"
STUDENTS = ["ada_complete", "ben_blank", "cai_partial", "dee_tampered", "eli_alternative"]
PARTIAL_TASKS = 2  # cai answers this many tasks of the first notebook


def meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def master_answers(master: Path) -> dict[str, str]:
    """grade_id -> the master's solution cell with the marker lines taken out."""
    nb = nbformat.read(master, as_version=4)
    out = {}
    for cell in nb.cells:
        if meta(cell).get("solution"):
            lines = [ln for ln in cell.source.splitlines()
                     if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")]
            out[meta(cell)["grade_id"]] = "\n".join(lines)
    return out


def alternative_answers(folder: Path = ALTERNATIVES) -> dict[str, str]:
    """Split every alternatives/NN_topic.py at its `# %% grade_id` lines."""
    answers = {}
    for path in sorted(folder.glob("*.py")):
        current, lines = None, []
        for line in path.read_text(encoding="utf-8").splitlines() + ["# %% "]:
            if line.startswith("# %% "):
                if current:
                    answers[current] = "\n".join(lines).strip("\n")
                current, lines = line[5:].strip(), []
            elif current:
                lines.append(line)
    return answers


def fill(nb, answers: dict[str, str], only: set[str] | None = None) -> None:
    for cell in nb.cells:
        gid = meta(cell).get("grade_id")
        if meta(cell).get("solution") and (only is None or gid in only):
            if gid not in answers:
                raise KeyError(f"no answer for solution cell {gid!r}")
            cell.source = answers[gid]


def tamper(nb) -> None:
    """What a student who edits tests to get a green notebook would do."""
    for cell in nb.cells:
        if meta(cell).get("grade"):
            cell.source = '"""I made this test pass."""\npass'


def build(out: Path) -> None:
    release = sorted((ROOT / "release" / ASSIGNMENT).glob("*.ipynb"))
    if not release:
        raise SystemExit("release/lab is empty: run `make build` first")
    alternatives = alternative_answers()
    first = release[0].name
    for student in STUDENTS:
        folder = out / student / ASSIGNMENT
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for path in release:
            nb = nbformat.read(path, as_version=4)
            answers = master_answers(ROOT / "source" / ASSIGNMENT / path.name)
            if student == "ada_complete":
                fill(nb, answers)
            elif student == "cai_partial" and path.name == first:
                fill(nb, answers, only=set(list(answers)[:PARTIAL_TASKS]))
            elif student == "dee_tampered" and path.name == first:
                fill(nb, answers)
            elif student == "dee_tampered":
                tamper(nb)
            elif student == "eli_alternative":
                fill(nb, alternatives)
            nbformat.write(nb, folder / path.name)
    print(f"wrote {len(STUDENTS)} submissions to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the sample class.")
    parser.add_argument("--out", type=Path, default=HERE / "sample_class")
    build(parser.parse_args(argv).out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
