# SPDX-License-Identifier: MIT
"""`ipclab` (the console script) and `python -m ipclab`."""
import sys

from ipclab import signals


def main():
    """The command line's own handler (cli.run_command) is not in place while its modules
    load (a second or so): an interrupt then is one line and its status too, not a
    traceback."""
    try:
        signals.install()
        from ipclab.cli import main as cli_main
        code = cli_main()
    except KeyboardInterrupt as e:
        sys.stderr.write(f"ipclab: {signals.word(e)}\n")
        code = signals.status(e)
    sys.exit(code)


if __name__ == "__main__":
    main()
