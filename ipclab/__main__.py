# SPDX-License-Identifier: MIT
from ipclab.signals import entry

entry()
