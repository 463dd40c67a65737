"""Vectors saved to disk, and the checks that they still fit what reads them.

Two kinds of file ship vectors of the real encoder: SQuAD's sentence vectors
(:func:`ragkit.squad.squad_vectors`) and the token vectors notebook 05
reranks with (:func:`ragkit.encoder.load_token_vectors`). Both are ``.npz``
files that record which model wrote them (its name and the SHA-256 of its
weights) and, for each set of texts, a digest of those texts, so a file
written by another model or for texts that have since changed is refused
with a message saying how to write it again, instead of silently giving
wrong neighbours.

This module holds that record and its checks once, for both. It imports no
other ragkit module: the encoder and the SQuAD loader both import it, and
the encoder also reads the SQuAD texts, so the model's identity lives here
rather than in :mod:`ragkit.encoder` (which re-exports it).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = ["MODEL_NAME", "MODEL_SHA256", "load_vectors", "save_vectors",
           "text_digest"]

MODEL_NAME = "all-MiniLM-L6-v2"
# sha256 of model.safetensors inside the package's model.zip
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

# A set of texts is either a list (checked by its digest alone) or an
# id -> text map (its ids are stored and checked too, in order).
Texts = Sequence[str] | Mapping[str, str]


def text_digest(texts: Sequence[str]) -> str:
    """One SHA-256 over a list of texts (each UTF-8, each ended by a NUL)."""
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _values(name: str, texts: Texts) -> list[str]:
    if isinstance(texts, Mapping):
        return list(texts.values())
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise TypeError(f"parts[{name!r}] must be a list of texts or an "
                        f"id -> text dict (got {type(texts).__name__})")
    return list(texts)


def save_vectors(
    path: str | os.PathLike,
    parts: Mapping[str, Texts],
    arrays: Mapping[str, np.ndarray],
) -> Path:
    """Write ``arrays`` with the record :func:`load_vectors` checks.

    ``parts`` names each set of texts the vectors were computed from; the
    file gets ``<name>_digest`` for each (and ``<name>_ids`` for a dict),
    plus the model's name and checksum. Compressed ``.npz``.
    """
    stored: dict[str, np.ndarray] = {
        "model": np.array(MODEL_NAME), "model_sha256": np.array(MODEL_SHA256)}
    for name, texts in parts.items():
        stored[name + "_digest"] = np.array(text_digest(_values(name, texts)))
        if isinstance(texts, Mapping):
            stored[name + "_ids"] = np.array(list(texts))
    clash = set(stored) & set(arrays)
    if clash:
        raise ValueError(f"arrays must not use the names {sorted(clash)}")
    stored.update(arrays)
    path = Path(path)
    np.savez_compressed(path, **stored)
    return path


def load_vectors(
    path: str | os.PathLike,
    parts: Mapping[str, Texts],
    arrays: Sequence[str],
    tool: str,
) -> dict[str, np.ndarray]:
    """Every array of a file :func:`save_vectors` wrote, once it is checked.

    The file must hold ``arrays`` and the record of ``parts``, come from the
    installed model, and for each part have the same ids (for a dict) and
    the same texts as the caller's. Otherwise a ``ValueError`` names the
    file, what differs, and that ``python -m <tool>`` writes it again.
    """
    file = Path(path)
    again = f"write it again with `python -m {tool}`"
    with np.load(file, allow_pickle=False) as npz:
        stored = {key: npz[key] for key in npz.files}
    needed = {"model", "model_sha256", *arrays}
    for name, texts in parts.items():
        needed.add(name + "_digest")
        if isinstance(texts, Mapping):
            needed.add(name + "_ids")
    missing = needed - set(stored)
    if missing:
        raise ValueError(f"{file}: lacks {sorted(missing)}; {again}")
    model, sha = str(stored["model"]), str(stored["model_sha256"])
    if (model, sha) != (MODEL_NAME, MODEL_SHA256):
        raise ValueError(
            f"{file}: vectors of {model} (sha256 {sha[:12]}...), but the "
            f"installed model is {MODEL_NAME} (sha256 {MODEL_SHA256[:12]}"
            f"...); {again}")
    for name, texts in parts.items():
        if isinstance(texts, Mapping):
            ids = [str(i) for i in stored[name + "_ids"]]
            if ids != list(texts):
                raise ValueError(
                    f"{file}: holds other {name} ids than asked for "
                    f"({len(ids)} stored, {len(texts)} asked); {again}")
        if str(stored[name + "_digest"]) != text_digest(_values(name, texts)):
            raise ValueError(f"{file}: the {name} texts changed since it was "
                             f"written; {again}")
    return stored
