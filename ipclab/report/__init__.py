# SPDX-License-Identifier: MIT
"""Presentation: what ipclab prints, computed elsewhere. show.py: one run as seed-shaped
tables; compare.py: a comparison; profile.py: where the instructions went; markdown.py: the
report with plot.py's PNGs; lab.py: the kernel lab's commands' output. The names the CLI
uses are the package's (plot.py is imported only where a report is written: matplotlib is
slow to import)."""

from ipclab.report.compare import render_compare
from ipclab.report.markdown import write_report
from ipclab.report.profile import render_profile_diff
from ipclab.report.show import build_text, quality, render_peers, render_views, show

__all__ = ["build_text", "quality", "render_compare", "render_peers", "render_profile_diff",
           "render_views", "show", "write_report"]
