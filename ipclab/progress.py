# SPDX-License-Identifier: MIT
"""A progress bar with an ETA on stderr (off with --quiet).

On a terminal it redraws one line; otherwise it prints a line at every
tenth of the run, so that logs stay short.
"""

import sys
import time


def log(msg):
    """One line for the user on stderr, outside any progress bar."""
    print(f"ipclab: {msg}", file=sys.stderr, flush=True)


def fmt_duration(s):
    s = max(0, int(round(s)))
    if s >= 3600:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02}m"
    if s >= 60:
        return f"{int(s // 60)}m{int(s % 60):02}s"
    return f"{int(s)}s"


class Progress:
    def __init__(self, total, est_total_s, stream=None, enabled=True, width=24):
        self.total = total
        self.done = 0
        self.est_total = est_total_s
        self.est_done = 0.0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.width = width
        self.start = time.monotonic()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last_decile = -1

    def eta(self):
        elapsed = time.monotonic() - self.start
        left = self.est_total - self.est_done
        if self.est_done > 0 and elapsed > 0:
            # Scale the plan's estimate by how fast the run has really been.
            return left * elapsed / self.est_done
        return left

    def step(self, label, est_s):
        self.done += 1
        self.est_done += est_s
        if not self.enabled:
            return
        frac = self.done / self.total
        fill = int(frac * self.width)
        bar = "#" * fill + "." * (self.width - fill)
        line = f"[{bar}] {self.done}/{self.total}  ETA {fmt_duration(self.eta())}  {label}"
        if self.tty:
            self.stream.write("\r\033[K" + line[:118])
            self.stream.flush()
        else:
            decile = int(frac * 10)
            if decile != self.last_decile:
                self.last_decile = decile
                self.stream.write(line + "\n")
                self.stream.flush()

    def close(self):
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
