"""Write the MiniLM token vectors that notebook 05 reranks with.

Late interaction keeps a vector per word piece, and encoding the help
centre's chunks and SQuAD's paragraphs costs a graded notebook tens of
seconds in a sandbox that cannot see the encoder's cache, so the vectors
ship as data, in the form the notebook's storage arithmetic assumes: 128
numbers per word piece (``ragkit.encoder.projection(128, seed=0)``) in
2-byte floats. Two files:

``data/helpcentre/minilm_tokens.npz`` (the 97 default chunks and the 43
questions) and ``data/squad-small/minilm_tokens.npz`` (the 87 paragraphs and
the 293 answerable questions); ``ragkit.encoder.token_texts`` says which
texts exactly.

``ragkit.encoder.load_token_vectors`` checks the model's checksum, the ids
and a digest of the texts on every load. Run from the repository root:
``.venv/bin/python -m tools.token_vectors``.
"""

from __future__ import annotations

from ragkit.encoder import TOKEN_FILES, token_texts, write_token_vectors

ROOT = TOKEN_FILES["helpcentre"].parents[2]

if __name__ == "__main__":
    for name, path in TOKEN_FILES.items():
        write_token_vectors(path, *token_texts(name))
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
