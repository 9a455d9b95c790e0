# SPDX-License-Identifier: MIT
import sys

from ipclab.cli import main

sys.exit(main())
