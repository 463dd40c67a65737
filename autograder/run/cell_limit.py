"""How long one notebook cell may run when the pack runs a notebook, in seconds.

Every step that runs cells reads its limit from here: nbgrader's Execute
(nbgrader_config.py, so autograde, the student's check and the builds), the
judge's deadline for a graded test cell (judge.py), the execute step's
fallback when no configuration gave one (rag_feedback.py) and the mistakes'
grading (testbed/mutants.py). grade.py's `--timeout` overrides it for one
run. The module imports nothing, so the sandboxed grader, a course folder's
copy of the grader and the student's bundle can all read it.
"""

# an endless loop in one cell costs the student that cell, not the whole
# class; two minutes is far more than any cell of the masters needs
CELL_TIMEOUT = 120
