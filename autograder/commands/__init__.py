"""Commands: the command-line entry points an instructor runs (grade, course, collect)."""
