"""The grader of the course pack, in rooms: intake (a submission comes in),
run (the sandboxes and the judge), scoring, reports (and the formgrader),
commands (what an instructor runs) and check (the student's own check).

A module imports modules of its own room or of a room before it in that
list, never of one after it (autograder/README.md, tests/test_grader_imports.py).
"""
