"""The `dnslab` command: every Make target ends up here; user errors print one line."""

from __future__ import annotations

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
    raise KeyboardInterrupt


def interrupt_on_signals() -> None:
    """SIGTERM (kill, a CI timeout) tears the lab down as Ctrl-C does; SIGINT is restored for
    a run started in the background, where the shell leaves it ignored."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
