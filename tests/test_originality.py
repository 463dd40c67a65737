"""No sentence or line of code of the course seed stands in the project."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT.parent / "shared" / "tools" / "originality.py"


def test_project_shares_no_run_of_words_with_the_seed():
    """originality.py lists every 12-word run shared with the seed; it must list none."""
    if not TOOL.exists():
        pytest.skip(f"the seed checker is not beside this checkout ({TOOL})")
    proc = subprocess.run([sys.executable, str(TOOL), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert last.startswith("0 run"), proc.stdout[-3000:]
