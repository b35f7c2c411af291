"""The `dnslab` command: every Make target ends up here; user errors print one line."""

from __future__ import annotations

import os
import signal
import sys

import click
import typer

from dnslab.commands import experiment as experiment_cmd
from dnslab.commands import lab as lab_cmd
from dnslab.commands import reproduce as reproduce_cmd
from dnslab.errors import LabError

app = typer.Typer(help="DNS performance lab", no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False)
app.add_typer(lab_cmd.app, name="lab")
app.add_typer(experiment_cmd.app, name="experiment")
app.command("reproduce", context_settings={"allow_extra_args": True,
                                          "ignore_unknown_options": True})(reproduce_cmd.reproduce)


INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C or SIGTERM


def _interrupt(signum: int, frame: object) -> None:
    """The first Ctrl-C or SIGTERM stops the command: the lab is torn down on the way out.
    Those that follow are let pass, so none cuts the teardown short: `timeout ... make
    experiment` sends SIGTERM to make and to its process group, and make passes its own on
    to the CLI, which so receives two (a second Ctrl-C is as likely)."""
    signal.signal(signal.SIGTERM, _while_stopping)
    signal.signal(signal.SIGINT, _while_stopping)
    raise KeyboardInterrupt


def _while_stopping(signum: int, frame: object) -> None:
    # os.write: a print here could land inside another print to stderr
    os.write(2, b"stopping: the lab is being torn down (SIGKILL stops at once and leaves it)\n")


def interrupt_on_signals() -> None:
    """SIGTERM (kill, a CI timeout, make passing one on) tears the lab down as Ctrl-C does;
    SIGINT is set for a run started in the background too, where the shell leaves it
    ignored."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


def run(argv: list[str]) -> int:
    """Run the command `argv` (without the program's name); its exit status. A user's
    error is one line on stderr and status 2; an interrupt (Ctrl-C, SIGTERM) status 130."""
    try:
        code = app(args=argv, prog_name="dnslab", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        code = INTERRUPTED
    except LabError as exc:
        print(exc.one_line(), file=sys.stderr)
        if exc.detail:
            print(exc.detail, file=sys.stderr)
        return 2
    except PermissionError as exc:
        print(f"error: permission denied: {exc.filename} (hint: run it with sudo)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        code = INTERRUPTED
    if code == INTERRUPTED:  # typer turns an interrupt into this status
        print("interrupted: the lab was torn down", file=sys.stderr)
    return code if isinstance(code, int) else 0


def main() -> None:
    interrupt_on_signals()
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
