"""Shared fixtures: one fresh build of the generated folders per test session."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def fresh_build(tmp_path_factory) -> Path:
    """release/ and notebooks/ rebuilt from source/ into a temporary folder."""
    out = tmp_path_factory.mktemp("build")
    subprocess.run([sys.executable, str(ROOT / "tools" / "build.py"), "--out", str(out)],
                   check=True, capture_output=True, text=True)
    return out
