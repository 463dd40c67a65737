"""Run: nbgrader as this pack runs it, the two sandboxes and the judge."""
