# SPDX-License-Identifier: MIT
"""One task of a Slurm job array of the lab's boots (slurm.Slurm.submit_array): the command
of entry SLURM_ARRAY_TASK_ID of the table on its standard input, with its output in that
entry's log, as a job of its own would have it.

    python -m ipclab.lab.array_task <TABLE

TABLE is a JSON list of {"argv": [...], "log": PATH}. The job's script holds it (a here
document that Slurm keeps with the job), so that no file a run leaves in its results folder
is ever taken for a command. A table that cannot be read, or an index it has no entry for,
is one line on stderr (the array's own log) and exit 2."""

import json
import os
import sys
from pathlib import Path

from ipclab import proc


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python -m ipclab.lab.array_task <TABLE", file=sys.stderr)
        return 2
    try:
        index = int(os.environ["SLURM_ARRAY_TASK_ID"])
        task = json.load(sys.stdin)[index]
        command, log_path = list(task["argv"]), task["log"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        print(f"array task: no task {os.environ.get('SLURM_ARRAY_TASK_ID')!r} in the table:"
              f" {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    # this run's log alone
    Path(log_path).unlink(missing_ok=True)
    with proc.open_append(log_path) as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    os.execv(command[0], command)
    return 1        # not reached: execv replaces this process or raises


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
