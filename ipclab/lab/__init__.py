# SPDX-License-Identifier: MIT
"""The kernel lab: build kernel variants (kernel), boot them and run one job inside (vm),
and drive `vm run` and `ab` (ab). docs/lab.md says how to use it.

The lab imports the rest of ipclab and calls the same API as `ipclab run`; only ipclab/cli/
(its parser and lab.py) imports the lab.
"""
