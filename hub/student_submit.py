"""nbgrader's submit on the course hub (the runtime's etc/jupyter names it):
the same copy as nbgrader's, with two changes for a machine a class shares.

* The submission's folder is left 0755, not 0777. nbgrader opens it to every
  account "so the instructor can delete later"; on the hub the instructor is
  root, and a folder every account can write into lets a class-mate who
  learns its name change the work in it (hub/exchange_collect.py refuses a
  submission other accounts may write into).
* A submission larger than `max_bytes` is refused before anything is
  copied: there are no disk quotas on the machine, and the exchange is
  shared. hubctl.py sets the number, the one collect holds it to.
"""
import os

from nbgrader.exchange.default.submit import ExchangeSubmit
from traitlets import Int


class ClosedSubmit(ExchangeSubmit):
    max_bytes = Int(20 * 2 ** 20, help="the most bytes one submission may hold").tag(config=True)

    def copy_files(self):
        total = 0
        for folder, _, names in os.walk(self.src_path):
            for name in names:
                total += os.lstat(os.path.join(folder, name)).st_size
        if total > self.max_bytes:
            self.fail(f"this submission holds {total // 2 ** 20} MB, more than the "
                      f"{self.max_bytes // 2 ** 20} MB the course accepts: remove large "
                      "files (data, outputs) from the assignment's folder and submit again")
        super().copy_files()
        os.chmod(os.path.join(self.inbound_path, self.assignment_filename), 0o755)
