"""The similarity report finds pasted twins and shared code, and no one else.

A small class of notebook 04 answers: ada answers with the master's
solutions, eli with the testbed's alternatives (written apart), pat pastes
ragkit's own rrf into the rrf cell, and sam hands in a bm25_scores that tom
copies with every name changed. Exactly two pairs may be listed: pat's rrf
beside ragkit/fusion.py, and sam's bm25_scores beside tom's.
"""
import inspect
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.scoring import similarity  # noqa: E402
from autograder.scoring.editions import answer_code  # noqa: E402

NB = "04_retrievers.ipynb"
SAM = '''def bm25_scores(query, texts, k1=1.5, b=0.75):
    if len(texts) == 0:
        raise ValueError("texts must not be empty")
    bags = []
    for text in texts:
        counts = {}
        for token in tokenize(text):
            counts[token] = counts.get(token, 0) + 1
        bags.append(counts)
    sizes = [sum(bag.values()) for bag in bags]
    average = sum(sizes) / len(sizes) if sum(sizes) else 1.0
    wanted = sorted(set(tokenize(query)))
    out = []
    for bag, size in zip(bags, sizes):
        score = 0.0
        for word in wanted:
            if word not in bag:
                continue
            holders = sum(1 for other in bags if word in other)
            weight = bm25_idf(len(bags), holders)
            tf = bag[word]
            score += weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * size / average))
        out.append(score)
    return out'''
RENAMES = {"bags": "docs", "counts": "tally", "sizes": "lengths", "average": "mean_len",
           "wanted": "terms", "out": "result", "bag": "doc", "size": "length",
           "score": "total", "word": "term", "holders": "df", "weight": "idf_w",
           "other": "d2", "token": "tok"}


def alternatives() -> dict[str, str]:
    text = (ROOT / "autograder" / "testbed" / "alternatives" / "04_retrievers.py").read_text()
    found = {}
    for block in re.split(r"^# %% ", text, flags=re.M)[1:]:
        gid, _, code = block.partition("\n")
        found[gid.strip()] = code.strip("\n")
    return found


def student(folder: Path, answers: dict[str, str]) -> None:
    """An autograded lab folder with notebook 04 answered by `answers`
    (grade_id -> code), the release's stubs elsewhere."""
    nb = nbformat.read(ROOT / "release" / "lab" / NB, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / NB)


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("similar")
    master = nbformat.read(ROOT / "source" / "lab" / NB, as_version=4)
    solutions = {c.metadata["nbgrader"]["grade_id"]: answer_code(c.source)
                 for c in master.cells if c.metadata.get("nbgrader", {}).get("solution")}
    from ragkit import fusion

    tom = SAM
    for old, new in RENAMES.items():
        tom = re.sub(rf"\b{old}\b", new, tom)
    classes = {"ada": solutions, "eli": alternatives(),
               "pat": {"nb04_rrf": inspect.getsource(fusion.rrf)},
               "sam": {"nb04_bm25_scores": SAM}, "tom": {"nb04_bm25_scores": tom}}
    for name, answers in classes.items():
        student(tmp / name / "autograded" / "lab", answers)
    rows = similarity.pairs({n: tmp / n / "autograded" / "lab" for n in classes},
                            ROOT / "release" / "lab", ROOT / "ragkit")
    return {(r["student"], r["cell"], r["other"]) for r in rows}, rows


def test_the_pasted_twin_and_the_renamed_copy_are_listed(listed):
    found, rows = listed
    assert ("pat", "nb04_rrf", "ragkit/fusion.py") in found, rows
    assert ("sam", "nb04_bm25_scores", "tom") in found, rows


def test_honest_students_are_not_listed(listed):
    found, rows = listed
    assert found == {("pat", "nb04_rrf", "ragkit/fusion.py"),
                     ("sam", "nb04_bm25_scores", "tom")}, json.dumps(rows, indent=1)


def test_a_blank_or_tiny_answer_is_not_compared():
    stub = "def rrf(rankings, k=60):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert len(similarity.fingerprint(stub, similarity.prints_of(stub)).hashes) == 0
