"""The similarity report finds pasted twins and shared code, and no one else.

A small class of notebook 04 answers: ada answers with the master's
solutions, eli with the testbed's alternatives (written apart), pat pastes
ragkit's own rrf into the rrf cell, and sam hands in a bm25_scores that tom
copies with every name changed, and zoe answers three cells through
ragkit's own code reached at run time (a fresh() copy, a copy loaded by
hand from ragkit's folder, the text of its file run with exec). Exactly two
pairs may be listed, pat's rrf beside ragkit/fusion.py and sam's
bm25_scores beside tom's, and zoe's three cells, each with the names that
reach.
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


ZOE = {
    "nb04_bm25_idf": "import ragkit.reference\n\n"
                     "def bm25_idf(n_docs, doc_freq):\n"
                     "    return ragkit.reference.fresh().bm25.bm25_idf(n_docs, doc_freq)",
    "nb04_rrf": "import importlib.util, os\nimport ragkit\n\n"
                "def rrf(rankings, k=60):\n"
                "    home = os.path.dirname(ragkit.__file__)\n"
                "    spec = importlib.util.spec_from_file_location(\n"
                "        'kit', os.path.join(home, '__init__.py'),\n"
                "        submodule_search_locations=[home])\n"
                "    kit = importlib.util.module_from_spec(spec)\n"
                "    spec.loader.exec_module(kit)\n"
                "    return kit.fusion.rrf(rankings, k)",
    "nb04_embed": "import ragkit.dense\n\n"
                  "def embed(text, idf, dim=256):\n"
                  "    space = {}\n"
                  "    exec(open(ragkit.dense.__file__).read().replace('from .', 'from ragkit.'),\n"
                  "         space)\n"
                  "    return space['embed'](text, idf, dim)",
}
REACHED = {("zoe", "nb04_bm25_idf", "reaches fresh, ragkit.reference"),
           ("zoe", "nb04_rrf", "reaches __file__, importlib.util"),
           ("zoe", "nb04_embed", "reaches __file__, exec")}


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
               "sam": {"nb04_bm25_scores": SAM}, "tom": {"nb04_bm25_scores": tom},
               "zoe": ZOE}
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
                     ("sam", "nb04_bm25_scores", "tom"), *REACHED}, json.dumps(rows, indent=1)


def test_answers_that_reach_into_ragkit_at_run_time_are_listed_with_the_names(listed):
    found, rows = listed
    assert REACHED <= found, json.dumps(rows, indent=1)
    assert all(r["share"] is None and r["code"] == ZOE[r["cell"]]
               for r in rows if r["student"] == "zoe")


def test_no_answer_written_honestly_reaches():
    """The masters' solutions, the testbed's alternatives and plausible
    slips, and every sample student's answers name nothing that reaches."""
    found = {}
    cells = [(str(p.relative_to(ROOT)), gid, code)
             for pattern in ("source/*/*.ipynb", "autograder/testbed/sample_class/*/*/*.ipynb")
             for p in sorted(ROOT.glob(pattern))
             for gid, code in similarity.answers(p).items()]
    for p in sorted((ROOT / "autograder" / "testbed" / "alternatives").glob("*.py")):
        for block in re.split(r"^# %% ", p.read_text(), flags=re.M)[1:]:
            gid, _, code = block.partition("\n")
            cells.append((p.name, gid.strip(), code))
    from autograder.testbed import mutants

    for m in mutants.load_mutants():
        nb = mutants.mutate(nbformat.read(mutants.master_path(m.notebook), as_version=4), m)
        code = next(c.source for c in nb.cells
                    if c.metadata.get("nbgrader", {}).get("grade_id") == m.cell)
        cells.append((m.notebook, f"{m.cell}: {m.mistake}", code))
    for where, gid, code in cells:
        if similarity.reaches(code):
            found[(where, gid)] = similarity.reaches(code)
    assert len(cells) > 600 and found == {}, (len(cells), found)


def test_a_blank_or_tiny_answer_is_not_compared():
    stub = "def rrf(rankings, k=60):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert len(similarity.fingerprint(stub, similarity.prints_of(stub)).hashes) == 0


def test_the_report_and_the_grade_sheet_show_an_answer_that_reaches(listed, tmp_path):
    from autograder.reports import report

    _, rows = listed
    page = "\n".join(report.similar_section(rows))
    assert "zoe: 04_retrievers.ipynb, cell nb04_embed reaches __file__, exec" in page
    similarity.write(tmp_path, rows)
    notes = similarity.notes(tmp_path)
    assert "04_retrievers.ipynb nb04_rrf reaches __file__, importlib.util" in notes["zoe"]
    assert "close to pat" not in notes.get("sam", "")  # (pairs still name each other)
    assert "close to tom" in notes["sam"] and "close to sam" in notes["tom"]
