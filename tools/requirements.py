"""Print the pip requirements listed in environment.yml, one per line.

environment.yml is the only list of dependencies. Conda reads it directly; the
Makefile pipes this script's output into `pip install -r` so that a plain venv
gets exactly the same pins. Only the `- pip:` block is read, and every entry in
it must be pinned with `==` (a loose pin would let two machines drift apart).

An entry whose comment starts with `no-deps` (`- tokenizers==0.23.3  # no-deps:
why`) must be installed without its declared dependencies, e.g. a model
package that would drag in torch. Such entries are left out of the default
output; `--no-deps` prints them alone, for a second
`pip install --no-deps -r` (see the Makefile). Conda users run that second
step by hand, as the comment at the top of environment.yml says.

usage: python tools/requirements.py [--no-deps] [path/to/environment.yml]
"""
import re
import sys
from pathlib import Path

PIN = re.compile(r"^[A-Za-z0-9_.\-\[\]]+==[A-Za-z0-9_.\-+]+$")
NO_DEPS = "no-deps"


def pip_entries(text: str) -> list[tuple[str, bool]]:
    """`(requirement, no_deps)` for every entry of the `- pip:` block."""
    entries, in_pip, pip_indent = [], False, 0
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
            # the marker must open the comment, so prose that merely
            # mentions it (`# unlike x, not no-deps`) does not count
            entries.append((req, comment.strip().startswith(NO_DEPS)))
    if not entries:
        raise ValueError("environment.yml: no `- pip:` block with pinned packages found")
    return entries


def pip_requirements(text: str, no_deps: bool = False) -> list[str]:
    """The `- pip:` entries to install with their dependencies (the default)
    or, with ``no_deps=True``, those marked `# no-deps` (maybe none)."""
    return [req for req, bare in pip_entries(text) if bare == no_deps]


def main(argv: list[str]) -> int:
    args = argv[1:]
    no_deps = "--no-deps" in args
    args = [a for a in args if a != "--no-deps"]
    path = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "environment.yml"
    reqs = pip_requirements(path.read_text(encoding="utf-8"), no_deps=no_deps)
    if reqs:
        print("\n".join(reqs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
