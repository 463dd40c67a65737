"""Intake: which submissions are graded, what is recorded of each, and when they were due."""
