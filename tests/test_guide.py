"""The reading material in guide/ holds together with itself and the notebooks.

guide/README.md (reading guide), guide/glossary.md and guide/references.md
link to each other and to the reading edition in notebooks/. These tests
check that every relative link leads somewhere, that every citation [n] in
the guide and in the masters under source/ names an entry of the reference
list, that the list runs from 1 to 30 in order with the required readings
marked, and that the glossary is alphabetical and covers the lecture's terms.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "guide"
REFERENCES = GUIDE / "references.md"
GLOSSARY = GUIDE / "glossary.md"
N_REFERENCES = 30
REQUIRED = (1, 2, 3)  # Lewis et al. (RAG), Karpukhin et al. (DPR), ColBERT
UNDATED = {30}  # the lecture slides: the lecture's list gives them no year

# PLANNED: notebooks of the reading edition that the guide already links to
# but that nobody has written yet. A link into notebooks/ may dangle only
# while its notebook is on this list and no master with its number exists.
# Delete an entry as soon as its master lands in source/lab/ (the test
# test_planned_notebooks_are_not_written_yet says when). Once the pack is
# complete this set is empty, and any link that still dangles fails.
PLANNED: set[str] = set()

LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
CITATION = re.compile(r"\[(\d+)\]")
URL = re.compile(r"https?://[^\s<>)\]]+")
ENTRY_START = re.compile(r'^- <a id="ref-(\d+)"></a>\*\*\[(\d+)\]\*\*', re.M)
TERM = re.compile(r"^- \*\*(.+?)\*\*", re.M)


def guide_files() -> list[Path]:
    files = sorted(GUIDE.glob("*.md"))
    assert files, f"no Markdown files in {GUIDE}"
    return files


def without_code(markdown: str) -> str:
    """Markdown with fenced blocks, inline code and $math$ blanked out."""
    markdown = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    markdown = re.sub(r"`[^`]*`", " ", markdown)
    return re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", " ", markdown, flags=re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    ids = set(re.findall(r'id="([^"]+)"', text))
    heads = {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
    return ids | heads


def reference_entries() -> dict[int, str]:
    """Reference number -> the entry's text on one line, in file order."""
    text = REFERENCES.read_text(encoding="utf-8")
    starts = list(ENTRY_START.finditer(text))
    entries = {}
    for here, nxt in zip(starts, starts[1:] + [None]):
        end = nxt.start() if nxt else len(text)
        body = text[here.start():end].split("\n\n")[0]
        number = int(here.group(2))
        assert int(here.group(1)) == number, (
            f"entry [{number}] carries the anchor ref-{here.group(1)}")
        assert number not in entries, f"[{number}] is listed twice"
        entries[number] = " ".join(body.split())
    return entries


def source_markdown() -> list[tuple[str, str]]:
    """(notebook path, markdown) for every markdown cell of every master."""
    cells = []
    for path in sorted((ROOT / "source").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook.get("cells", []):
            if cell.get("cell_type") == "markdown":
                src = cell.get("source", "")
                src = "".join(src) if isinstance(src, list) else src
                cells.append((str(path.relative_to(ROOT)), src))
    return cells


def master_with_number(name: str) -> list[Path]:
    number = name.split("_", 1)[0]
    return sorted((ROOT / "source" / "lab").glob(f"{number}_*.ipynb"))


def dangling_reason(target: Path) -> str | None:
    """Why a link to a missing file is not allowed, or None when it is."""
    if target.parent == ROOT / "notebooks" and target.suffix == ".ipynb":
        if (ROOT / "source" / "lab" / target.name).exists():
            return None  # the master exists; `make build` writes this file
        if target.name in PLANNED:
            masters = master_with_number(target.name)
            if not masters:
                return None
            return (f"the master for {target.name[:2]} is "
                    f"{masters[0].relative_to(ROOT)}, so the link should "
                    f"point at notebooks/{masters[0].name}")
        return (f"{target.name} has no master in source/lab/ and is not "
                f"in PLANNED")
    return "the file does not exist"


def test_relative_links_lead_to_files_or_planned_notebooks():
    """Each relative link in guide/*.md names an existing file (and anchor)."""
    problems = []
    for md in guide_files():
        for text, href in LINK.findall(md.read_text(encoding="utf-8")):
            if re.match(r"^[a-z][a-z0-9+.-]*:", href):
                continue  # https:, mailto: and the like are not checked here
            file_part, _, fragment = href.partition("#")
            target = (md.parent / file_part).resolve() if file_part else md
            where = f"{md.name}: [{' '.join(text.split())}]({href})"
            if not target.exists():
                reason = dangling_reason(target)
                if reason:
                    problems.append(f"{where}: {reason}")
                continue
            if fragment and target.suffix == ".md":
                if fragment not in anchors(target):
                    problems.append(f"{where}: no anchor #{fragment} in "
                                    f"{target.name}")
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_planned_notebooks_are_not_written_yet():
    """PLANNED lists only notebooks whose master does not exist yet."""
    written = sorted(name for name in PLANNED
                     if (ROOT / "source" / "lab" / name).exists()
                     or (ROOT / "notebooks" / name).exists())
    assert not written, (
        f"{written} exist now: delete them from PLANNED in "
        f"tests/test_guide.py, so their links must resolve from now on")


def test_guide_citations_are_in_the_reference_range():
    """Every [n] in guide/*.md is a number from 1 to 30."""
    bad = []
    for md in guide_files():
        text = without_code(md.read_text(encoding="utf-8"))
        for n in CITATION.findall(text):
            if not 1 <= int(n) <= N_REFERENCES:
                bad.append(f"{md.name}: [{n}]")
    assert not bad, f"citations outside 1..{N_REFERENCES}: {bad}"


def test_reference_list_is_1_to_30_in_order():
    """references.md lists [1] .. [30], each once, in numerical order."""
    got = list(reference_entries())
    want = list(range(1, N_REFERENCES + 1))
    assert got == want, f"expected the entries {want}, got {got}"


def test_every_reference_has_authors_title_and_a_link():
    """Each entry names authors, a quoted title, a year and a web address."""
    for number, entry in reference_entries().items():
        assert re.search(r'\*\* [^"]+\. "[^"]+', entry), (
            f"[{number}] should start with its authors, then a quoted title")
        if number not in UNDATED:
            assert re.search(r"\b(19|20)\d\d\b", entry), (
                f"[{number}] has no year")
        assert URL.search(entry), f"[{number}] has no https link"


def test_exactly_the_required_readings_are_marked():
    """[1], [2] and [3] say "required reading"; no other entry does."""
    marked = tuple(n for n, entry in reference_entries().items()
                   if "required reading" in entry.lower())
    assert marked == REQUIRED, f"expected {REQUIRED} marked, got {marked}"


def test_reading_guide_has_a_section_per_required_reading():
    """The guide has a heading for each required paper, with its number."""
    headings = re.findall(r"^### (.+)$",
                          (GUIDE / "README.md").read_text(encoding="utf-8"),
                          re.M)
    for n in REQUIRED:
        assert any(h.startswith(f"[{n}] ") for h in headings), (
            f"guide/README.md has no '### [{n}] ...' heading")


def test_citations_in_the_masters_are_in_the_reference_list():
    """Every [n] in a markdown cell of source/**.ipynb has an entry."""
    listed = set(reference_entries())
    missing = sorted({(path, int(n))
                      for path, src in source_markdown()
                      for n in CITATION.findall(without_code(src))
                      if int(n) not in listed})
    assert not missing, f"cited but not in guide/references.md: {missing}"


def test_links_in_notebook_reference_lists_match_the_guide():
    """A notebook's reference entry [n] uses the addresses of entry [n]."""
    entries = reference_entries()
    wrong = []
    for path, src in source_markdown():
        for line in src.splitlines():
            start = re.match(r"^\s*(?:[-*]|\d+\.)?\s*\**\[(\d+)\]", line)
            if not start or int(start.group(1)) not in entries:
                continue
            known = set(URL.findall(entries[int(start.group(1))]))
            for url in URL.findall(line):
                if url.rstrip(".,;") not in known:
                    wrong.append(f"{path}: [{start.group(1)}] {url}")
    assert not wrong, f"addresses that differ from references.md: {wrong}"


def glossary_terms() -> list[str]:
    return TERM.findall(GLOSSARY.read_text(encoding="utf-8"))


def sort_key(term: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "",
                  term.lower().replace("-", " ").replace("/", " "))


def test_glossary_is_alphabetical():
    """Glossary entries run in alphabetical order (case and dashes ignored)."""
    terms = glossary_terms()
    assert len(terms) > 0, "no '- **Term** —' entries in guide/glossary.md"
    keys = [sort_key(t) for t in terms]
    wrong = [(a, b) for a, b, ka, kb in zip(terms, terms[1:], keys, keys[1:])
             if ka > kb]
    assert not wrong, f"out of order (first, then second): {wrong}"


def test_every_glossary_entry_links_somewhere():
    """Each entry links to the notebook or guide section that explains it."""
    text = GLOSSARY.read_text(encoding="utf-8")
    entries = re.split(r"\n(?=- \*\*)", text)[1:]
    bare = [TERM.match(e).group(1) for e in entries if not LINK.search(e)]
    assert not bare, f"glossary entries without a link: {bare}"


# The lecture's own glossary, and the further terms the notebooks rely on.
REQUIRED_TERMS = [
    "Agentic RAG", "ANN", "Bi-encoder", "BM25", "Chunk",
    "Contextual retrieval", "Cross-encoder", "Dense retrieval", "Embedding",
    "Faithfulness", "Failure point", "Grounded answer", "GraphRAG",
    "Hard negative", "HNSW", "Hybrid search", "HyDE",
    "Index time / query time", "Inverted index", "Late interaction",
    "Lost in the middle", "MaxSim", "MRR", "nDCG@k", "Non-parametric memory",
    "Parametric memory", "Prompt injection", "RAG", "RAPTOR", "Recall@k",
    "Reranker", "RRF", "Self-RAG", "Stand-in",
    "Chunk overlap", "IVF", "Product quantisation", "RAG-Sequence / RAG-Token",
    "Hit@k", "Abstention", "Citation check", "Stale index", "Permission leak",
    "RRF constant k", "IDF", "Saturation", "Length normalisation",
    # the terms of the going-further sections and their statistics
    "efSearch", "efConstruction", "M", "nprobe", "Coverage", "Risk",
    "Clopper-Pearson interval", "Paired bootstrap", "Cluster bootstrap", "Word piece",
    # the statistics and data notebooks 03 to 09 lean on (issue 56)
    "Bonferroni correction", "Calibration split / held-out split",
    "Pseudo-relevance feedback", "ROC curve / AUC", "Selection effect",
    "Spherical k-means", "SQuAD 2.0",
]


def aliases(term: str) -> set[str]:
    """'IDF (inverse document frequency)': the whole, 'IDF' and the gloss."""
    names = {term}
    match = re.match(r"^(.*?) \((.*)\)$", term)
    if match:
        names |= {match.group(1), match.group(2)}
    return {name.lower() for name in names}


@pytest.mark.parametrize("term", REQUIRED_TERMS)
def test_glossary_defines_the_lecture_terms(term):
    """Each term of the lecture has its own glossary entry."""
    known = set().union(*(aliases(t) for t in glossary_terms()))
    assert term.lower() in known, f"guide/glossary.md has no entry '{term}'"
