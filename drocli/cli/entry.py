"""The console entry point (`drocli = drocli.cli:main`, `python -m drocli`): runs the group,
turns every error into one line and an exit code (2 for user errors, 3 for internal ones) and
stops SIGTERM and SIGHUP as Ctrl-C does, even while Python shuts down.
"""

from __future__ import annotations

import contextlib
import os
import sys

import click

from drocli.cli.error_lines import os_error_line, usage_line
from drocli.cli.group import cli
from drocli.errors import DrocliError


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP: stopped like Ctrl-C (workers stopped, finished cells kept)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop_on(signum, _frame):
    raise Terminated(signum)


def _stopped(e: BaseException) -> None:
    """One line and the shell's exit code for a stop: 130 (Ctrl-C), 143 (SIGTERM), 129
    (SIGHUP)."""
    cause = e if isinstance(e, Terminated) else getattr(e, "__cause__", None)
    if isinstance(cause, Terminated):
        import signal

        name = signal.Signals(cause.signum).name
        click.echo(f"drocli: stopped by {name}; re-run the same command to resume", err=True)
        sys.exit(128 + cause.signum)
    click.echo("drocli: interrupted; re-run the same command to resume", err=True)
    sys.exit(130)


def _stop_late(signum, _frame):
    """A stop while Python shuts down after the command, its work done and written (it
    died silently there): one line and 128 + signal at once, since no exception can be
    caught any more."""
    import signal

    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"drocli: stopped by {signal.Signals(signum).name} while exiting; its "
                    "work was done\n".encode())
    os._exit(128 + signum)


def main(argv=None):
    """Entry point: user errors print one line and exit 2; no traceback. SIGTERM and SIGHUP
    stop a run as Ctrl-C does, and one that comes while Python shuts down after the
    command still prints its line (`_stop_late`)."""
    import signal
    import threading

    from drocli.run.scratch import matplotlib_config

    matplotlib_config()
    before = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            before[sig] = signal.signal(sig, _stop_on)
    try:
        _main(argv)
    except KeyboardInterrupt as e:      # a stop as _main was printing its own last line
        _stopped(e)
    finally:   # in-process callers (tests, given argv) get their handlers back
        for sig, handler in before.items():
            signal.signal(sig, handler if argv is not None else _stop_late)


def _main(argv) -> None:
    try:
        cli.main(args=argv, prog_name="drocli", standalone_mode=False)
    except click.exceptions.Abort as e:
        _stopped(e)
    except getattr(click.exceptions, "NoArgsIsHelpError", ()) as e:   # bare `drocli [data]`
        click.echo(e.ctx.get_help(), err=True)        # the help as click lays it out
        sys.exit(2)
    except click.UsageError as e:   # click's own four lines (usage, hint, blank, error)
        click.echo(f"drocli: error: {usage_line(e)}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except DrocliError as e:
        click.echo(f"drocli: error: {e.line()}", err=True)
        sys.exit(2)
    except OSError as e:            # disk full, read-only folder, permissions, file too large
        click.echo(f"drocli: error: {os_error_line(e)}", err=True)
        sys.exit(2)
    except KeyboardInterrupt as e:
        _stopped(e)
    except Exception as e:
        if os.environ.get("DROCLI_DEBUG"):
            raise
        click.echo(f"drocli: internal error: {type(e).__name__}: {e} "
                   "(set DROCLI_DEBUG=1 for the traceback)", err=True)
        sys.exit(3)
    sys.exit(0)
