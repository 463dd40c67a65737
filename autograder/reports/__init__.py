"""Reports: the class report and the formgrader's safety."""
