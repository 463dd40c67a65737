"""Keep hidden tests hidden in the feedback a student receives.

nbgrader puts the hidden tests back into a notebook before grading it, and its
HTML feedback shows them, tracebacks included (nbgrader issues 917 and 1363).
Students who may resubmit would then see the answers. This preprocessor runs
inside `nbgrader generate_feedback`: it cuts each hidden region out of the cell
source and shortens a failing cell's traceback to its last line, which names
the error without quoting the test code.
"""
from nbgrader.preprocessors import NbGraderPreprocessor

BEGIN = "### BEGIN HIDDEN TESTS"
END = "### END HIDDEN TESTS"
NOTE = "# (hidden tests ran here; their code is not shown)"


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


class RedactHiddenTests(NbGraderPreprocessor):
    """Strip hidden test code (and tracebacks that quote it) from feedback."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        cell.source, had_hidden = cut_hidden(cell.source)
        if had_hidden:
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    # the traceback quotes the failing line, which may be hidden
                    out["traceback"] = [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"]
        return cell, resources
