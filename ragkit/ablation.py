"""The ablation table of a RAG project: one row per step, measured alike.

Written with notebook 09 (being filled in).
"""

from __future__ import annotations
