"""Print the pip requirements listed in environment.yml, one per line.

environment.yml is the only list of dependencies. Conda reads it directly; the
Makefile pipes this script's output into `pip install -r` so that a plain venv
gets exactly the same pins. Only the `- pip:` block is read, and every entry in
it must be pinned with `==` (a loose pin would let two machines drift apart).

usage: python tools/requirements.py [path/to/environment.yml]
"""
import re
import sys
from pathlib import Path

PIN = re.compile(r"^[A-Za-z0-9_.\-\[\]]+==[A-Za-z0-9_.\-+]+$")


def pip_requirements(text: str) -> list[str]:
    """Return the entries of the `- pip:` block of an environment.yml text."""
    reqs, in_pip, pip_indent = [], False, 0
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
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
            reqs.append(req)
    if not reqs:
        raise ValueError("environment.yml: no `- pip:` block with pinned packages found")
    return reqs


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "environment.yml"
    print("\n".join(pip_requirements(path.read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
