"""How RAG fails: triage by stage, abstention, injection, stale and leaky indexes.

Written with notebook 08 (being filled in).
"""

from __future__ import annotations
