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
    except ModuleNotFoundError as e:
        if not e.name or e.name.split(".")[0] == "ipclab":
            raise       # a module of ours missing is a bug, not the environment
        sys.stderr.write(f"ipclab: error: Python module {e.name!r} is missing: run `make deps`"
                         " and use .venv/bin/ipclab (or .venv/bin/python -m ipclab)\n")
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
