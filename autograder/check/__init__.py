"""Check: the student's own check of a notebook (make check)."""
