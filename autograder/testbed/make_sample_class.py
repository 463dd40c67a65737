"""Write the sample class: submissions of the lab, the quiz and the project
that the grader must score.

    python autograder/testbed/make_sample_class.py

Each student starts from the student edition in release/<assignment>/ and
changes it the way a real student might. The result is committed under
autograder/testbed/sample_class/ and graded by `make course`; tests/test_grading.py
checks every score.

    ada_complete     every task answered with the master's solution; the
                     project on a corpus of her own (alternatives/project_corpus)
    ben_blank        the release, untouched (no project corpus either)
    cai_partial      only the first two tasks of the first notebook answered;
                     of the lab she hands in that notebook alone (the
                     project with her corpus)
    dee_tampered     lab: hands in the first two notebooks, the first
                     complete, the second blank with every graded test
                     cell rewritten to `pass`; quiz and project: blank
                     with every graded cell rewritten so
    eli_alternative  every task answered with code written differently from the
                     master (autograder/testbed/alternatives/*.py), her own corpus
    fay_malformed    the project only, complete, but one question of her
                     corpus has no `answer` field: graded, reported, no crash

Rebuild it after changing a master (`make sample-class`); a test fails when it
is stale.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
from autograder.scoring.editions import answer_code  # noqa: E402
ALTERNATIVES = HERE / "alternatives"
ASSIGNMENT = "lab"
ASSIGNMENTS = ("lab", "quiz", "project")
STUDENTS = ["ada_complete", "ben_blank", "cai_partial", "dee_tampered", "eli_alternative",
            "fay_malformed"]
ONLY = {"fay_malformed": ("project",)}  # who hands in just some assignments
# who hands in only the lab's first N notebooks (the rest are reported
# missing and score 0, as blank ones would: ben hands in all nine blank, so
# the class still shows every blank notebook scoring 0, in half the time)
LAB_HANDED_IN = {"cai_partial": 1, "dee_tampered": 2}
PARTIAL_TASKS = 2  # cai answers this many tasks of the first notebook
CORPUS = ALTERNATIVES / "project_corpus"  # the sample students' own corpus
BROKEN_QUESTION = 2  # fay's questions.json: this item loses its "answer"
# answers that name something in the corpus (the project's hand-computed
# nDCG names a question): on the students' own corpus the master's answer
# would be wrong, so they come from alternatives/ for everyone
CORPUS_BOUND = ("proj_ndcg",)
# the project's tasks that never read the student's corpus: a malformed
# corpus stops the setup cell's last lines, not these (fay keeps their points)
CORPUS_FREE = ("proj_chunker", "proj_unit_tests", "proj_size")


def students_of(assignment: str) -> list[str]:
    """The sample students who hand in `assignment`."""
    return [s for s in STUDENTS if assignment in ONLY.get(s, ASSIGNMENTS)]


def meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def master_answers(master: Path) -> dict[str, str]:
    """grade_id -> the master's solution cell with the marker lines taken out."""
    nb = nbformat.read(master, as_version=4)
    out = {}
    for cell in nb.cells:
        if meta(cell).get("solution"):
            out[meta(cell)["grade_id"]] = answer_code(cell.source)
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


def write_corpus(folder: Path, broken: bool = False) -> None:
    """The students' own project corpus; `broken` drops one gold answer."""
    shutil.copytree(CORPUS, folder)
    if broken:
        path = folder / "questions.json"
        questions = json.loads(path.read_text(encoding="utf-8"))
        del questions[BROKEN_QUESTION]["answer"]
        path.write_text(json.dumps(questions, indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8")


def build(out: Path) -> None:
    alternatives = alternative_answers()
    for assignment in ASSIGNMENTS:
        release = sorted((ROOT / "release" / assignment).glob("*.ipynb"))
        if not release:
            raise SystemExit(f"release/{assignment} is empty: run `make build` first")
        first = release[0].name
        lab = assignment == "lab"
        for student in STUDENTS:
            folder = out / student / assignment
            if folder.exists():
                shutil.rmtree(folder)
            if assignment not in ONLY.get(student, ASSIGNMENTS):
                continue
            folder.mkdir(parents=True)
            for n, path in enumerate(release):
                if lab and n >= LAB_HANDED_IN.get(student, len(release)):
                    continue
                nb = nbformat.read(path, as_version=4)
                answers = master_answers(ROOT / "source" / assignment / path.name)
                answers.update({g: alternatives[g] for g in CORPUS_BOUND if g in answers})
                if student in ("ada_complete", "fay_malformed"):
                    fill(nb, answers)
                elif student == "cai_partial" and path.name == first:
                    fill(nb, answers, only=set(list(answers)[:PARTIAL_TASKS]))
                elif student == "dee_tampered" and lab and path.name == first:
                    fill(nb, answers)
                elif student == "dee_tampered":
                    tamper(nb)
                elif student == "eli_alternative":
                    fill(nb, alternatives)
                nbformat.write(nb, folder / path.name)
            if assignment == "project" and student != "ben_blank":
                write_corpus(folder / "corpus", broken=student == "fay_malformed")
    print(f"wrote {len(STUDENTS)} students' submissions to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the sample class.")
    parser.add_argument("--out", type=Path, default=HERE / "sample_class")
    build(parser.parse_args(argv).out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
