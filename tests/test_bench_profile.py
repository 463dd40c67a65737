"""tools/bench_grading.py --profile: py-spy's samples read back as seconds
per kind of process, and the grader's by stage. The samples here are
written by hand in py-spy's raw format (one stack a line, the processes
outermost first, then the count), so each rule is checked on a case whose
answer is known without running anything."""
from __future__ import annotations

import pytest

from tools.bench_grading import RATE, kind_of, per_kind

GRADE = 'process 1:"python autograder/commands/grade.py --submissions s --out o"'
GRADER = 'process 9:"python /tmp/w/grader-code/autograder/pipeline/autograde_steps.py --inner"'
ZYGOTE = 'process 7:"python /sandbox/kernel_sandbox.py --zygote {}"'
PLAIN = 'process 3:"python -m ipykernel_launcher -f /tmp/k.json"'


def stack(*frames: str, count: int) -> str:
    return ";".join(frames) + f" {count}"


@pytest.mark.parametrize("frame, kind", [
    (PLAIN, "kernels"), (ZYGOTE, "kernels"), (GRADER, "nbgrader and the judge"),
    ('process 4:"python .venv/bin/nbgrader autograde lab --force"', "nbgrader and the judge"),
    (GRADE, "grade.py (start, copies, report)"),
    ('process 5:"bwrap --die-with-parent"', "other")])
def test_a_process_is_told_by_its_command_line(frame, kind):
    assert kind_of(frame) == kind


def test_a_sample_counts_for_its_innermost_process_and_the_grader_by_stage(tmp_path):
    raw = tmp_path / "run.raw"
    raw.write_text("\n".join([
        # the grader, started by grade.py: counted for the grader, not grade.py
        stack(GRADE, GRADER, "steps (a.py:1)", "Judge.run_test (judge.py:9)",
              "_find_and_load (<frozen importlib._bootstrap>:1)", count=RATE * 3),
        stack(GRADE, GRADER, "steps (a.py:1)", "_find_and_load (<frozen>:1)", count=RATE),
        stack(GRADE, GRADER, "NbGraderAPI.generate_feedback (api.py:1)", count=RATE // 2),
        stack(GRADE, GRADER, "Autograde.start (a.py:2)", count=RATE // 4),
        stack(GRADE, ZYGOTE, "run_kernel (k.py:3)", count=RATE * 2),
        stack(GRADE, "main (grade.py:4)", count=RATE)]) + "\n")
    kinds, stages = per_kind(raw)
    assert kinds == {"nbgrader and the judge": 4.75, "kernels": 2.0,
                     "grade.py (start, copies, report)": 1.0}
    # an import the judge makes is the judge's: the outermost stage wins
    assert stages == {"the judge": 3.0, "imports": 1.0, "generate_feedback": 0.5,
                      "nbgrader's own work": 0.25}
