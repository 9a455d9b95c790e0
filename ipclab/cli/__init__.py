# SPDX-License-Identifier: MIT
"""ipclab command line: run suites, show, compare and report results.

    ipclab run [SUITE|WORKLOAD] [--quick|--full] [--reps N] [-o FILE] [--resume FILE]
    ipclab suites | show FILE | compare OLD NEW | report FILE... [-o DIR] | env
    ipclab kernel build|list, vm run, ab OLD NEW, bisect --tree DIR GOOD BAD: the kernel lab

Bad input (missing or corrupt files, mismatched cells, unknown names, a
missing engine) prints one line and exits 2.

parser.py builds every command's parser; host.py (run, suites, show, compare, report, env)
and lab.py (kernel, vm, ab, bisect, census) hold their handlers. This module parses and is
the one error handler (run_command).
"""

import sys

from ipclab import EXIT_USAGE, Error, proc, signals
from ipclab.cli.parser import build_parser, flag_value_problem


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    engine_args = None
    if "--" in argv:
        i = argv.index("--")
        argv, engine_args = argv[:i], argv[i + 1:]
    parser = build_parser()
    why = flag_value_problem(parser, argv)
    if why:
        sys.stderr.write(f"ipclab: error: {why}\n")
        return EXIT_USAGE
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if engine_args is not None:
        args.engine_args = engine_args
    return run_command(args)


def run_command(args):
    """The one error handler: every failure the user can act on is one line and an exit
    status, never a traceback."""
    try:
        return args.func(args)
    except Error as e:
        sys.stderr.write(f"ipclab: error: {e}\n")
        return e.code
    except KeyboardInterrupt as e:      # Ctrl-C, or SIGTERM (signals.Terminated)
        proc.kill_all()
        sys.stderr.write(f"ipclab: {signals.word(e)}\n")
        return signals.status(e)
    except BrokenPipeError:
        return 0
    except OSError as e:
        # Files we were asked to write (-o, --report-dir) or read: the
        # user's environment, not a bug; one line like any bad input.
        where = f" {e.filename}:" if getattr(e, "filename", None) else ""
        sys.stderr.write(f"ipclab: error:{where} {e.strerror or e}\n")
        return EXIT_USAGE
