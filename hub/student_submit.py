"""nbgrader's submit on the course hub (the runtime's etc/jupyter names it):
the same copy as nbgrader's, but the submission's folder is left 0755, not
0777. nbgrader opens it to every account "so the instructor can delete
later"; on the hub the instructor is root, and a folder every account can
write into lets a class-mate who learns its name change the work in it.
hub/exchange_collect.py refuses a submission other accounts may write into.
"""
import os

from nbgrader.exchange.default.submit import ExchangeSubmit


class ClosedSubmit(ExchangeSubmit):
    def copy_files(self):
        super().copy_files()
        os.chmod(os.path.join(self.inbound_path, self.assignment_filename), 0o755)
