"""The pipeline: one student graded, step by step (run, autograde, keep)."""
