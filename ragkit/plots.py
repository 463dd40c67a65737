"""Figures and bookkeeping the lab notebooks draw, kept out of their cells.

A notebook's lecture is in its prose and in the code a student writes; the
matplotlib calls that lay out a figure, and the loops that gather a table
for it, are not what the week teaches. They live here, one function per
figure or table, called in one line from the notebook (the way d2l keeps
its plotting in its package). Each function takes the numbers to show and
returns what the notebook's check cell asserts, so the figure's claims are
still computed and checked where the student reads them.

This module imports matplotlib and the rest of ragkit; no other ragkit
module imports it, so the grader and the retrieval code never load it.
The sections follow the notebooks.
"""
from __future__ import annotations


# ---------------------------------------------------------------------------
# 01 and 02: why retrieval, the pipeline
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 03: indexing
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 04: retrievers
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 05: reranking
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 06: agentic RAG
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 07: measuring
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 08: failure modes
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 09: the project
# ---------------------------------------------------------------------------
