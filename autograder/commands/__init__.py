"""Commands: what an instructor runs (grade, course, collect), and how they drive nbgrader."""
