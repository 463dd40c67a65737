"""Scoring: what a submission earned, and what was wrong with it."""
