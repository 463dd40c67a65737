"""What a student reads after grading: a summary per part, no hidden code.

nbgrader puts the hidden tests back into a notebook before grading it, and its
HTML feedback shows them, tracebacks included (nbgrader issues 917 and 1363).
Students who may resubmit would then see the answers. Two preprocessors run
inside `nbgrader generate_feedback`, after nbgrader's GetGrades has stored
each graded cell's score in its metadata:

    RedactHiddenTests  cuts each hidden region out of the cell source and
                       shortens a failing cell's traceback to its last line,
                       which names the error without quoting the test code
    PartSummary        puts a table at the top of the page: for each
                       `## Part X (N points)`, the points earned of the points
                       possible and the message of its first failing check

`FeedbackExporter` renders those pages a little faster than nbconvert's own
HTML exporter (same page, one pass less).

The part grouping lives here because this file is the one the grader copies
into its course folder; autograder/check/validate.py (`make check`) uses it too.
For the same reason `GuardedExecute`, the execute step of grade.py's
autograde (a dying kernel or a flood of output costs the student the cells
concerned, not the notebook), lives at the end of this file.
"""
from __future__ import annotations

import ast
import asyncio
import contextlib
import html
import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async, run_sync
from nbconvert.exporters import HTMLExporter
from nbconvert.exporters import html as nbconvert_html
from nbformat.v4 import new_markdown_cell, new_output
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool, Integer, Unicode

from autograder.run.cell_limit import CELL_TIMEOUT
from autograder.run.python_tree import parse

# spelt in two pieces so that this file, which the student bundle ships for
# `make check`, holds no line that reads as a marker itself
BEGIN = "### BEGIN " + "HIDDEN TESTS"
END = "### END " + "HIDDEN TESTS"
NOTE = "# (hidden tests ran here; their code is not shown)"
# a lab part's heading may end in its path, "· core" or "· extension" (editions.py)
PART_HEADING = re.compile(r"^#{1,6}\s+(Part\s+\w+|Question\s+\d+)\s*\([\d.]+\s+points?\)"
                          r"(?:[ \t]*·[ \t]*(core|extension)[ \t]*$)?", re.MULTILINE)
HIDDEN_DOC = "(hidden)"
MESSAGE_WIDTH = 300  # characters of an error message a summary shows
# a test the judge itself failed on (a bug of the grader, not the student's)
GRADER_FAULT = ("the grader failed while running this test; your instructor "
                "sees it in the grading report and will grade it again")


@dataclass
class Part:
    """One graded task: its heading and the indices of its cells."""
    name: str
    answers: list[int] = field(default_factory=list)  # solution cells
    tests: list[int] = field(default_factory=list)    # graded cells
    path: str = ""  # "core" or "extension" when the heading says so


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def parts_of(nb) -> list[Part]:
    """The graded parts of `nb`, in order, each with the cells under its heading.

    A cell belongs to the last `## Part X (N points)` heading above it; graded
    cells above the first heading form a part named "before Part ...".
    Parts without graded cells are left out.
    """
    parts = [Part("(no part heading)")]
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for match in PART_HEADING.finditer(cell.source):
                parts.append(Part(match.group(1), path=match.group(2) or ""))
        meta = nbgrader_meta(cell)
        if meta.get("grade"):
            parts[-1].tests.append(index)
        elif meta.get("solution"):
            parts[-1].answers.append(index)
    if len(parts) > 1:
        parts[0].name = f"before {parts[1].name}"
    return [p for p in parts if p.tests]


def docstring(source: str) -> str:
    """A cell's leading docstring on one line ('' when it has none)."""
    try:
        text = ast.get_docstring(parse(source)) or ""
    except SyntaxError:  # e.g. IPython magics; fall back to the first line
        first = source.lstrip().splitlines()[0] if source.strip() else ""
        text = first.strip("\"' ") if first[:1] in "\"'" else ""
    return " ".join(text.split())


def is_hidden(cell) -> bool:
    """A hidden test cell: its docstring starts with "(hidden)"."""
    return docstring(cell.source).startswith(HIDDEN_DOC)


def error_message(cell, width: int = MESSAGE_WIDTH, stderr: bool = False) -> str | None:
    """The last line of the cell's first error, e.g. "AssertionError: ...",
    cut to `width` characters; with `stderr`, text written to stderr counts
    as a failure too, as nbgrader scores a graded cell that writes there 0."""
    def cut(text: str) -> str:
        text = " ".join(str(text).split())
        return text if len(text) <= width else text[:width - 3] + "..."

    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            name, text = out.get("ename", "Error"), cut(out.get("evalue", ""))
            return f"{name}: {text}" if text else name
        if stderr and out.get("output_type") == "stream" and out.get("name") == "stderr":
            return "wrote to stderr (graded as a failure): " + cut(out.get("text", ""))
    return None


def cut_hidden(source: str) -> tuple[str, bool]:
    """Return `source` with every hidden region replaced by one note line."""
    kept, inside, found = [], False, False
    for line in source.splitlines():
        marker = line.strip()
        if marker == BEGIN:
            inside, found = True, True
            kept.append(line[: len(line) - len(line.lstrip())] + NOTE)
        elif marker == END:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept), found


def secret_lines(nb, shortest: int = 20) -> set[str]:
    """Lines of `nb`'s hidden tests that appear nowhere else in it (stripped,
    at least `shortest` characters): finding one in a feedback page means
    the page shows hidden code, whatever marker was or was not removed."""
    hidden, shown = set(), set()
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            marker = line.strip()
            if marker in (BEGIN, END):
                inside = marker == BEGIN
            elif len(marker) >= shortest:
                (hidden if inside else shown).add(marker)
    return hidden - shown


class RedactHiddenTests(NbGraderPreprocessor):
    """Strip hidden test code (and tracebacks that quote it) from feedback."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        hidden = is_hidden(cell)
        cell.source, had_hidden = cut_hidden(cell.source)
        if had_hidden or hidden:
            # a hidden test's feedback is its verdict: the error's name and
            # message, never its traceback (which quotes the failing line)
            # nor anything else the cell printed
            cell.outputs = [new_output("error", ename=out.get("ename", "Error"),
                                       evalue=out.get("evalue", ""),
                                       traceback=[f"{out.get('ename', 'Error')}: "
                                                  f"{out.get('evalue', '')}"])
                            for out in cell.get("outputs", [])
                            if out.get("output_type") == "error"][:1]
        return cell, resources


def points(value) -> str:
    return f"{float(value or 0):g}"


def summary_rows(nb) -> list[dict]:
    """Per part: points earned and possible (GetGrades' score and points on
    each graded cell) and the first graded cell that lost points."""
    rows = []
    for part in parts_of(nb):
        cells = [nb.cells[i] for i in part.tests]
        earned = sum(float(nbgrader_meta(c).get("score") or 0) for c in cells)
        possible = sum(float(nbgrader_meta(c).get("points") or 0) for c in cells)
        # a written answer (a graded markdown cell) is marked by a person
        tests = [c for c in cells if c.cell_type == "code"]
        written = sum(float(nbgrader_meta(c).get("points") or 0)
                      for c in cells if c.cell_type == "markdown")
        failing = next((c for c in tests if float(nbgrader_meta(c).get("score") or 0)
                        < float(nbgrader_meta(c).get("points") or 0)), None)
        row = {"part": part.name, "earned": earned, "possible": possible,
               "written": written, "cell": None, "hidden": False, "message": None}
        if failing is not None:
            meta = nbgrader_meta(failing)
            row.update(cell=meta.get("grade_id"), hidden=is_hidden(failing),
                       message=error_message(failing, stderr=True)
                       or f"scored {points(meta.get('score'))} of {points(meta.get('points'))}")
        rows.append(row)
    return rows


def summary_html(rows: list[dict]) -> str:
    """The summary as one HTML table (no blank lines: markdown keeps it whole)."""
    esc = html.escape
    lines = ["<h3>Your score by part</h3>",
             '<table class="table table-condensed">',
             "<thead><tr><th>Part</th><th>Points</th><th>First failing check</th>"
             "</tr></thead>", "<tbody>"]
    for row in rows:
        if row["cell"] is None:
            check = "all checks passed"
            if row.get("written"):
                check += (f"; written answers ({points(row['written'])} points) "
                          "are marked by a person")
        else:
            kind = "hidden test" if row["hidden"] else "test"
            check = (f'<a href="#{esc(row["cell"])}">{esc(row["cell"])}</a> ({kind}): '
                     f'<code>{esc(row["message"])}</code>')
        lines.append(f"<tr><td>{esc(row['part'])}</td>"
                     f"<td>{points(row['earned'])} / {points(row['possible'])}</td>"
                     f"<td>{check}</td></tr>")
    earned = sum(r["earned"] for r in rows)
    possible = sum(r["possible"] for r in rows)
    lines += [f"<tr><th>Total</th><th>{points(earned)} / {points(possible)}</th><th></th></tr>",
              "</tbody>", "</table>",
              "<p>A hidden test's code is not shown; its message says what it "
              "checked. Each part's hidden test cell names its checks in its "
              "first line.</p>"]
    return "\n".join(lines)


class PartSummary(NbGraderPreprocessor):
    """Insert the per-part summary table as the first cell of the feedback."""

    def preprocess(self, nb, resources):
        rows = summary_rows(nb)
        if rows:
            cell = new_markdown_cell(summary_html(rows))
            cell.id = "feedback-summary"
            nb.cells.insert(0, cell)
        return nb, resources


IMG_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt=)")
NO_ALT = "No description has been provided for this image"  # nbconvert's words


class _RenderedPage:
    """What FeedbackExporter hands HTMLExporter in place of BeautifulSoup."""

    def __init__(self, markup: str, features: str | None = None):
        self.markup = markup

    def select(self, selector: str) -> list:
        # the selectors that matter find nothing on a feedback page (the
        # alt text is added below, in __str__); the test checks the pages match
        return []

    def __str__(self) -> str:
        return IMG_WITHOUT_ALT.sub(f'<img alt="{NO_ALT}"', self.markup)


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTMLExporter without its second pass over the page.

    After rendering, HTMLExporter parses the whole page again with
    BeautifulSoup to give images without alt text one, and to make the cells
    of JupyterLab-style pages focusable. nbgrader's feedback template is the
    classic one, where the second job finds nothing, and the parse cost
    about 40% of `generate_feedback` (profiled on the sample class). On the
    feedback template this class adds the alt text with a regular expression
    instead; any other template gets the stock exporter. The pages are the
    same once parsed (tests/test_feedback.py compares them).
    """

    def from_notebook_node(self, nb, resources=None, **kw):
        if self.template_name != "feedback":
            return super().from_notebook_node(nb, resources, **kw)
        # (autograde_steps.py renders in a process of its own, one page at a time)
        soup = nbconvert_html.BeautifulSoup
        nbconvert_html.BeautifulSoup = _RenderedPage
        try:
            return super().from_notebook_node(nb, resources, **kw)
        finally:
            nbconvert_html.BeautifulSoup = soup


class GuardedExecute(Execute):
    """nbgrader's Execute, made to survive a hostile notebook (grade.py).

    * A cell's output is capped at `max_output_bytes` (text and data as
      received): past the cap nothing more is kept, a note says so, and the
      kernel is stopped (so, as below, this cell and the later ones fail)
      instead of the grader filling its memory with a gigabyte of prints.
    * So is the output of all the notebook's cells together, at
      `max_notebook_output_bytes` (a hook can print just under the cell's
      cap before every cell): past it, the same.
    * A kernel that dies (os._exit, a segfault, SIGKILL, the memory limit)
      fails the cell it died in and every code cell after it, while the
      cells before it keep their points; plain nbgrader gives up on the
      whole notebook instead.
    * A cell interrupted at its time limit fails. If the interrupt does not
      stop it (the cell ignores SIGINT), the kernel is stopped after
      `interrupt_grace` seconds more and every later code cell fails at
      once, instead of each waiting out its own time limit behind it.
    * With `memory_events` (the sandbox's cgroup, grade.py), a cell during
      which the sandbox ran out of memory, and a process in it was killed,
      fails with a MemoryError.
    """

    max_output_bytes = Integer(
        2_000_000, help="bytes of output kept per cell; the cell fails past it"
    ).tag(config=True)

    max_notebook_output_bytes = Integer(
        20_000_000, help="bytes of output kept for all a notebook's cells; past "
                         "it the kernel is stopped and the later cells fail"
    ).tag(config=True)

    interrupt_grace = Integer(
        5, help="seconds a cell interrupted at its time limit (and whose output "
                "did not settle) has to stop before the kernel is stopped"
    ).tag(config=True)

    memory_events = Unicode(
        "", help="the sandbox cgroup's memory.events (memory.oom_control in "
                 "cgroup v1), whose oom_kill count is read after each cell"
    ).tag(config=True)

    sandbox_memory_bytes = Integer(
        0, help="the sandbox cgroup's memory cap (for the message)"
    ).tag(config=True)

    judge = Bool(
        True, help="run graded test cells in the judge (judge.py), outside the "
                   "student's kernel; off: in the kernel, as plain nbgrader does"
    ).tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._died_in = None
        self._not_run = None  # what the code cells after _died_in say
        self._output_sizes: dict[int, int] = {}
        self._notebook_output = 0
        self._flooded_in = None  # the cell whose output passed a cap
        self._stopping = None    # the kernel's shutdown, once begun
        self._judge = None
        try:
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            if self._judge is not None:
                self._judge.close()
        for cell in nb.cells:
            # nbgrader gives full points to a cell whose first output is a
            # non-numeric result, even when an error follows it: any error
            # output scores 0 here
            outs = cell.get("outputs", [])
            if nbgrader_meta(cell).get("grade") and any(
                    o.get("output_type") == "error" for o in outs):
                cell.outputs = [o for o in outs if o.get("output_type") != "execute_result"]
        return nb, resources

    def _judge_cell(self, cell, resources, index):
        """A graded test cell's outputs as the judge decides them; None for a
        cell the kernel runs (a locked one is also run in the judge when a
        test needs what it defines)."""
        meta = nbgrader_meta(cell)
        if self._judge is None:
            from autograder.run.judge import Judge
            kinds = [("test" if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")
                      else "setup" if nbgrader_meta(c).get("locked") and not nbgrader_meta(c).get("solution")
                      else "other", c.source if c.cell_type == "code" else "")
                     for c in self.nb.cells]
            folder = resources.get("metadata", {}).get("path") or "."
            self._judge = Judge(self.km, kinds, folder, float(self.timeout or CELL_TIMEOUT))
            self._judge.connect()  # before any of the student's code runs
        if meta.get("grade") and not meta.get("solution"):
            label = f"<test {meta.get('grade_id', index)}>"
            started, calls = time.monotonic(), self._judge.calls
            callbacks = self._judge.callbacks
            try:
                outputs = self._judge.run_test(cell.source, label, is_hidden(cell))
            except Exception:  # noqa: BLE001 (the grader's own fault: this cell only)
                self.log.warning("the judge failed on %s:\n%s", label, traceback.format_exc())
                outputs = [{"output_type": "error", "ename": "GraderFault",
                            "evalue": GRADER_FAULT, "traceback": [GRADER_FAULT]}]
            verdict = [new_output(**o) for o in outputs]
            self.log.info("judged %s in %.2f s (%d calls to the kernel, %d back)",
                          meta.get("grade_id", index), time.monotonic() - started,
                          self._judge.calls - calls, self._judge.callbacks - callbacks)
            if self._judge.abandoned:
                self.log.info("ended the kernel's request loop of %s: %s",
                              meta.get("grade_id", index), "; ".join(self._judge.abandoned))
            self._drain_iopub()
            return verdict
        if meta.get("locked") and not meta.get("solution"):
            calls = self._judge.calls
            self._judge.run_setup(index, cell.source)
            if self._judge.calls != calls:  # (a cell that asked the kernel nothing
                self._drain_iopub()         # made it publish nothing)
        return None

    def _drain_iopub(self) -> None:
        """Read away what the judge's requests made the kernel publish (two
        status messages a call, and anything the student's code printed):
        none of it belongs to a cell, and thousands of them queued before the
        next cell would make nbclient miss that cell's own output in time."""
        async def drain():
            stop = time.monotonic() + 30  # a thread that prints forever
            while time.monotonic() < stop:
                try:
                    await ensure_async(self.kc.iopub_channel.get_msg(timeout=0.01))
                except Empty:
                    return

        run_sync(drain)()

    def preprocess_cell(self, cell, resources, index):
        if self._died_in is None and self.judge and cell.cell_type == "code":
            kills = self._oom_kills()
            verdict = self._judge_cell(cell, resources, index)
            if verdict is not None:
                cell.outputs = verdict
                self._after_judged(cell, index, kills)
                return cell, resources
        if self._died_in is not None:
            if cell.cell_type == "code":
                cell.outputs = [error_output(
                    "KernelDied", self._not_run or f"not run: the kernel died in "
                                  f"cell {self._died_in} and was not restarted")]
            return cell, resources
        kills = self._oom_kills()
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._died_in = index
            cell.outputs.append(error_output("KernelDied", DIED))
        except CellTimeoutError as err:
            # interrupted at its time limit, but its output did not settle
            cell.outputs.append(error_output("CellTimeoutError", str(err).splitlines()[0]))
            if self._flooded_in != index:
                self._stop_if_deaf(cell, index)
        if self._flooded_in == index and self._died_in is None:
            # the cell ended before the kernel's stop landed: the same outcome
            self._stop_kernel()
            self._died_in = index
            cell.outputs.append(error_output("KernelDied", DIED))
        self._note_oom_kills(cell, kills)
        return cell, resources

    def _stop_if_deaf(self, cell, index: int, again: bool = False) -> None:
        """After a cell's time limit: a kernel that does not answer within
        the grace ignores the interrupt, and every later cell would wait out
        its own limit behind it; stop it, and fail the rest at once. With
        `again`, a kernel still busy after the grace is interrupted once more
        and given the grace again before that."""
        if self._responds(self.interrupt_grace):
            return
        if again:
            async def interrupt():
                await ensure_async(self.km.interrupt_kernel())

            with contextlib.suppress(Exception):
                run_sync(interrupt)()
            if self._responds(self.interrupt_grace):
                return
        self._stop_kernel()
        self._died_in = index
        self._not_run = (f"not run: the kernel was stopped in cell {index}, "
                         "which ignored the interrupt at its time limit")
        cell.outputs.append(error_output("KernelStopped", IGNORED_INTERRUPT))

    def _note_oom_kills(self, cell, kills: int) -> None:
        """Fail `cell` if the OOM killer struck in the sandbox while it ran."""
        if (killed := self._oom_kills() - kills) > 0:
            cell.outputs.append(error_output("MemoryError", (
                f"the sandbox ran out of memory: its processes together passed "
                f"{self.sandbox_memory_bytes // 2 ** 20} MB, and {killed} of them "
                f"{'was' if killed == 1 else 'were'} killed")))

    def _after_judged(self, cell, index: int, kills: int) -> None:
        """What a judged cell's calls did to the kernel: a death or an
        ignored interrupt stops the notebook there, as in a cell it runs."""
        names = [o.get("ename") for o in cell.outputs if o.get("output_type") == "error"]
        if "KernelDied" in names:
            self._died_in = index
        elif "CellTimeoutError" in names and not self._judge.stopped_loop:
            # (a kernel whose interrupted request loop came to its end in
            # the judge took the interrupt: it is idle, no probe needed;
            # one that did not is interrupted once more before it is
            # stopped: one run in many under load lost it that way)
            self._stop_if_deaf(cell, index, again=True)
        self._note_oom_kills(cell, kills)

    def _oom_kills(self) -> int:
        """Processes the OOM killer has killed in the sandbox's cgroup."""
        if not self.memory_events:
            return 0
        try:
            text = Path(self.memory_events).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def _responds(self, seconds: float) -> bool:
        """Whether the kernel answers a kernel_info request within `seconds`
        (it does not while a cell keeps it busy)."""
        async def ask() -> bool:
            msg_id = self.kc.kernel_info()
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                try:
                    msg = await ensure_async(self.kc.shell_channel.get_msg(timeout=left))
                except Empty:
                    return False
                if msg["parent_header"].get("msg_id") == msg_id:
                    return True
            return False

        try:
            return run_sync(ask)()
        except Exception:  # noqa: BLE001 (a kernel that cannot answer does not)
            return False

    def _stop_kernel(self) -> None:
        """Stop the kernel (once), and wait until it is stopped."""
        async def stop():
            if self._stopping is None:
                self._stopping = asyncio.ensure_future(self.km.shutdown_kernel(now=True))
            await self._stopping

        try:
            run_sync(stop)()
        except Exception:  # noqa: BLE001 (already gone)
            pass

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        size = len(content.get("text", "")) + sum(
            len(str(v)) for v in content.get("data", {}).values())
        used = self._output_sizes.get(cell_index, 0) + size
        self._output_sizes[cell_index] = used
        self._notebook_output += size
        if used <= self.max_output_bytes and \
                self._notebook_output <= self.max_notebook_output_bytes:
            return super().output(outs, msg, display_id, cell_index)
        if self._flooded_in is None:  # the first message past a cap
            self._flooded_in = cell_index
            if used > self.max_output_bytes:
                note = f"{OUTPUT_STOPPED} more than {self.max_output_bytes} bytes"
            else:
                note = (f"{NOTEBOOK_OUTPUT_STOPPED} more than "
                        f"{self.max_notebook_output_bytes} bytes from this notebook's cells")
            outs.append(new_output("stream", name="stderr",
                                   text=f"\n{note}; the kernel was stopped]\n"))
            # an interrupt races the flood (the kernel may drown in its own
            # queued messages first); stopping it gives one outcome every time
            if self._stopping is None:
                self._stopping = asyncio.ensure_future(self.km.shutdown_kernel(now=True))
        return None


# what a failing cell's outputs say (grade.py turns them into problems.csv lines)
DIED = "the kernel died while running this cell (exit, crash, or a resource limit)"
IGNORED_INTERRUPT = ("the cell ignored the interrupt at its time limit; the kernel "
                     "was stopped")
OUTPUT_STOPPED = "[output stopped:"
NOTEBOOK_OUTPUT_STOPPED = "[notebook output stopped:"


def error_output(name: str, value: str):
    return new_output("error", ename=name, evalue=value,
                      traceback=[f"{name}: {value}"])
