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
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "build.py"), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"the build failed:\n{proc.stderr[-5000:]}"
    return out


@pytest.fixture(scope="session")
def noted_retriever():
    """The help centre as the answerer and the agent read it: sentence chunks
    of at most 25 words with their title note in front, and both indexes."""
    from ragkit.chunking import chunk_documents
    from ragkit.corpus import load_documents
    from ragkit.retrieval import Retriever

    return Retriever(chunk_documents(load_documents(), "sentence", size=25, contextual=True))
