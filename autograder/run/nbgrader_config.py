"""nbgrader settings shared by every command this pack runs.

Every script that runs nbgrader copies this file into the throwaway course
folder it works in (autograder/run/nbgrader_cli.py), so there is one place to
change a setting.
"""
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (nbgrader injects get_config)

c.CourseDirectory.course_id = "rag-building-blocks"

# the stub students see in place of a solution
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# a cell's time limit (autograder/run/cell_limit.py). A course folder holds
# its own copy of the grader's modules (copied in beside this file as
# autograder/run/); elsewhere the package is the installed one
if (Path.cwd() / "autograder" / "run" / "cell_limit.py").exists():
    sys.path.insert(0, str(Path.cwd()))
from autograder.run.cell_limit import CELL_TIMEOUT  # noqa: E402

c.Execute.timeout = CELL_TIMEOUT
c.Execute.interrupt_on_timeout = True

# every kernel gets CurveZMQ keys from the process that starts it, as its
# kernelspec offers, so its traffic is encrypted and ipykernel stops warning
# "Kernel is running over TCP without encryption" once per notebook.
# tools/build.py and validate.py load this file for their own kernels too.
c.KernelManager.transport_encryption = "auto"

# a student who deleted a graded cell gets it back (and loses its points),
# instead of the whole notebook failing to grade (nbgrader issue 1941)
c.OverwriteCells.add_missing_cells = True

# feedback opens with a table of points per part and the first failing
# check's message, and shows which hidden test failed, not its code
# (nbgrader issues 917 and 1363). The grading script copies rag_feedback.py
# into the course folder it runs nbgrader in (as autograder/run/ there).
if (Path.cwd() / "autograder" / "run" / "rag_feedback.py").exists():
    # GetGrades stores each graded cell's score, which the summary reads
    c.GenerateFeedback.preprocessors = [
        "nbgrader.preprocessors.GetGrades",
        "autograder.run.rag_feedback.RedactHiddenTests",
        "autograder.run.rag_feedback.PartSummary",
        "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    ]
    # the same pages as nbconvert's HTMLExporter, rendered in less time
    c.GenerateFeedback.exporter_class = "autograder.run.rag_feedback.FeedbackExporter"
    # a kernel that dies fails the rest of its notebook's cells instead of
    # the whole notebook, and a cell's output is capped (grade.py sets the
    # cap: --max-output); the other steps are nbgrader's own
    c.Autograde.autograde_preprocessors = [
        "autograder.run.rag_feedback.GuardedExecute",
        "nbgrader.preprocessors.IgnorePattern",
        # one output per run of a cell's stdout (or stderr), as Jupyter shows
        # it: ipykernel sends what a cell printed every 0.2 s, so under load
        # one print(table) can arrive in two messages, and then the
        # autograded notebook and the feedback page would hold two blocks
        # (tests/test_kernel_start.py)
        "nbconvert.preprocessors.CoalesceStreamsPreprocessor",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "nbgrader.preprocessors.LimitOutput",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    c.CoalesceStreamsPreprocessor.enabled = True  # nbconvert's are off unless told
