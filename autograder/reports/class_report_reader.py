"""The unprivileged half of the class report (class_report.py): it reads
one student's autograded notebooks and sends back, as plain frames, only
what the page needs of them: each failed graded cell's first line of
error, and the option each quiz answer cell sets.

class_report.py starts it as `python -I -S class_report_reader.py UID GID
ANSWERS FD:IDS...`, as root. The notebooks are the student's bytes run through
the grader (their outputs, their answers), so nothing of them is parsed
with root's rights: root opens each notebook (never through a link) and
hands the open file over; this reader imports what it needs, gives up root
for UID:GID with no extra group, caps its memory, CPU time, processes and
file writes, and only then reads. ANSWERS is `grade_id=name,...`: the
answer cells whose option is wanted and the variable each one sets; IDS
(`id,id,...`) are the graded cells of FD's master, the only ones whose
failure is sent.

Frames, as gate_reader.py sends them: one kind byte, a 4-byte big-endian
length, that many bytes. The parent trusts none of it (it checks every
grade id against the master, caps every length and count, escapes every
message):

  U uid gid       who this reader is once it gave up root (os.getresuid,
                  os.getresgid: the real, effective and saved ids)
  N index         the notebook FD number `index` (0, 1, ...) starts
  M grade_id\\0msg  a graded cell failed with `msg` ("Name: first line")
  Q grade_id\\0opt  the answer cell sets its variable to `opt`
  X why           that notebook cannot be read (too large, not JSON, too
                  deeply nested, not a notebook)
  Z               the end
"""
import ast
import json
import os
import resource
import struct
import sys

MAX_NOTEBOOK = 50_000_000  # bytes of an autograded notebook read at most
MAX_ANSWER = 10_000  # characters of a quiz answer cell parsed at most
MAX_MESSAGE = 300  # characters of a failure message sent
MAX_ID = 200  # characters of a grade id sent
MEMORY_BYTES = 2 * 2 ** 30  # a 50 MB notebook parsed as JSON fits in this
CPU_SECONDS = 60
OPTIONS = ("A", "B", "C", "D")


def send(kind: bytes, payload: bytes = b"") -> None:
    # looked up when sent: class_report.py imports this module for
    # chosen_option, in a process whose stdout may have no buffer
    sys.stdout.buffer.write(kind + struct.pack(">I", len(payload)) + payload)


def text(value: str) -> bytes:
    return value.encode("utf-8", "replace")


def chosen_option(source: str, name: str) -> str:
    """The option an answer cell sets `name` to: "A".."D", "other" for any
    other value or form, "none" when the cell does not set it. The text is
    parsed, never run."""
    if len(source) > MAX_ANSWER:  # an answer is a line; parse no more than that
        return "other"
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "other"
    found = "none"
    for node in tree.body:  # the last plain assignment counts, as it would run
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            value = node.value
            found = (value.value if isinstance(value, ast.Constant)
                     and value.value in OPTIONS else "other")
    return found


def joined(value) -> str:
    """A notebook's text field (a string or a list of strings) as one str."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def failure(cell: dict) -> str:
    """The error a graded cell showed, as "Name: first line"; '' if none."""
    outputs = cell.get("outputs")
    for output in outputs if isinstance(outputs, list) else []:
        if isinstance(output, dict) and output.get("output_type") == "error":
            lines = joined(output.get("evalue"))[:10 * MAX_MESSAGE].strip().splitlines()
            name = joined(output.get("ename"))[:100] or "Error"
            return f"{name}: {lines[0] if lines else ''}"[:MAX_MESSAGE]
    return ""


def read_notebook(fd: int, graded: set[str], answers: dict[str, str]) -> None:
    """Send what one notebook's graded and answer cells say."""
    if os.fstat(fd).st_size > MAX_NOTEBOOK:
        raise ValueError(f"larger than {MAX_NOTEBOOK // 1_000_000} MB")
    with os.fdopen(fd, "rb") as stream:
        data = stream.read(MAX_NOTEBOOK + 1)
    if len(data) > MAX_NOTEBOOK:
        raise ValueError(f"larger than {MAX_NOTEBOOK // 1_000_000} MB")
    nb = json.loads(data)
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a notebook")
    for cell in cells:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        meta = meta.get("nbgrader") if isinstance(meta, dict) else None
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if not isinstance(grade_id, str) or len(grade_id) > MAX_ID:
            continue
        if grade_id in graded and meta.get("grade") is True and (message := failure(cell)):
            send(b"M", text(grade_id) + b"\0" + text(message))
        elif grade_id in answers:
            option = chosen_option(joined(cell.get("source")), answers[grade_id])
            send(b"Q", text(grade_id) + b"\0" + text(option))


def give_up_root(uid: int, gid: int) -> None:
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    for limit, value in ((resource.RLIMIT_AS, MEMORY_BYTES),
                         (resource.RLIMIT_CPU, CPU_SECONDS),
                         (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_NPROC, 0)):
        resource.setrlimit(limit, (value, value))


def main() -> None:
    uid, gid = int(sys.argv[1]), int(sys.argv[2])
    answers = dict(pair.split("=", 1) for pair in sys.argv[3].split(",") if "=" in pair)
    notebooks = [(int(fd), set(ids.split(","))) for fd, _, ids in
                 (arg.partition(":") for arg in sys.argv[4:])]
    give_up_root(uid, gid)
    send(b"U", " ".join(map(str, (*os.getresuid(), *os.getresgid(),
                                  *os.getgroups()))).encode())
    for index, (fd, graded) in enumerate(notebooks):
        send(b"N", str(index).encode())
        try:
            read_notebook(fd, graded, answers)
        except RecursionError:
            send(b"X", b"nested too deeply")
        except MemoryError:
            send(b"X", b"the reader ran out of memory")
        except (ValueError, OSError, AttributeError, TypeError) as err:
            send(b"X", text(f"{type(err).__name__}: {err}"[:MAX_MESSAGE]))
        sys.stdout.flush()
    send(b"Z")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
