"""Write data/squad-small/minilm.npz: MiniLM vectors of the SQuAD subset.

Graded notebooks run where the encoder's disk cache is out of sight, and
encoding the 87 paragraphs and 626 questions afresh takes tens of seconds,
so the vectors ship as a data file. This script encodes every paragraph and
every question of ``ragkit.squad.load_squad()`` with
``ragkit.encoder.MiniLMEncoder`` (cached runs are quick) and stores them as
float16 together with the model's name and checksum and a digest of the
texts, which ``ragkit.squad.squad_vectors`` checks on every load.

Run from the repository root: ``.venv/bin/python -m tools.squad_vectors``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ragkit.encoder import MiniLMEncoder
from ragkit.squad import SQUAD_VECTORS, load_squad
from ragkit.stored_vectors import save_vectors


def write(path: Path = SQUAD_VECTORS) -> Path:
    docs, questions = load_squad()
    paragraph_texts = [d.text for d in docs]
    question_texts = [q.question for q in questions]
    encoder = MiniLMEncoder()
    paragraphs = encoder.embed_many(paragraph_texts)
    asked = encoder.embed_many(question_texts)
    return save_vectors(
        path, {"paragraph": paragraph_texts, "question": question_texts},
        {"paragraphs": paragraphs.astype(np.float16),
         "questions": asked.astype(np.float16)})


if __name__ == "__main__":
    out = write(Path(sys.argv[1]) if len(sys.argv) > 1 else SQUAD_VECTORS)
    print(f"wrote {out} ({out.stat().st_size} bytes)")
