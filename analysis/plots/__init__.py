"""Plot registry: each finding's package has a `plots.py` of `@plot`-decorated draw functions.

A draw function draws one run into one matplotlib Axes:

    @plot("time_wait", title="TIME_WAIT sockets on the secondary")
    def time_wait(run: Run, ax: Axes, notes: list[str]) -> None: ...

Which plots a run gets is said by its experiment file (`plots: [time_wait, ...]`), as
dns-shotgun's scenario names its charts; plot names are unique across findings.

and raises `NotApplicable` when the run lacks what it shows (e.g. no monitor data). Data
errors (`LabError`) become a one-line note instead of the plot; a data problem that still
leaves a plot goes into `notes`. A draw function may return lines that say in words what the
plot shows for this run (its `readings`); the report prints them under the caption. The
same function serves the per-run report (one axes) and `python -m analysis compare` (one
axes per run, side by side).
"""

from __future__ import annotations

import importlib
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.axes import Axes

from analysis import style
from analysis.rundata import NotApplicable, Run
from dnslab import findings
from dnslab.errors import LabError
from dnslab.experiment_spec import load_spec

DrawFn = Callable[[Run, Axes, list[str]], list[str] | None]


@dataclass(frozen=True)
class PlotSpec:
    name: str
    title: str
    draw: DrawFn
    caption: str = ""
    y_from_zero: bool = True  # counts and times: the y axis starts at 0
    # small multiples: draw gets a (sub)figure per run and lays out its own panels
    panels: bool = False


PLOTS: dict[str, PlotSpec] = {}


def plot(name: str, *, title: str, caption: str = "", y_from_zero: bool = True,
         panels: bool = False) -> Callable[[DrawFn], DrawFn]:
    def decorate(func: DrawFn) -> DrawFn:
        existing = PLOTS.get(name)
        if existing is not None and existing.draw.__qualname__ != func.__qualname__:
            raise ValueError(f"plot name {name!r} is registered twice")
        PLOTS[name] = PlotSpec(name=name, title=title, draw=func, caption=caption,
                               y_from_zero=y_from_zero, panels=panels)
        return func

    return decorate


def load_all() -> dict[str, PlotSpec]:
    """Every finding package's plots, and those of the shared procedures."""
    for found in findings.all_findings():
        found.module("plots")
    importlib.import_module(f"{findings.OWN_PROCEDURES[1]}.plots")
    return PLOTS


def plots_for(run: Run) -> list[PlotSpec]:
    """The plots the run's experiment file names, in its order; a name no finding's plots.py
    defines is a LabError (a typo in the experiment file). A run of a file of the user's own
    reads them from that file's copy in the run folder."""
    own = run.meta.get("own_experiment")
    names = load_spec(str(run.dir / own)).plots if own else experiment_plots(run.experiment)
    registry = load_all()
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise LabError(f"experiment {run.experiment!r} names unknown plot(s) "
                       f"{', '.join(unknown)}", hint="plots: " + ", ".join(sorted(registry)))
    return [registry[n] for n in names]


def experiment_plots(experiment: str) -> list[str]:
    """The `plots:` of the experiment file a run's experiment name stands for (none when the
    name is no experiment's)."""
    base = findings.base_experiment(experiment)
    return load_spec(base).plots if base else []


@dataclass
class RenderedPlot:
    name: str
    title: str
    caption: str
    png: Path | None = None
    svg: Path | None = None
    notes: list[str] = field(default_factory=list)
    readings: list[str] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None


def describe(run: Run) -> str:
    """The footer line of a run: which run, on what machine and runtime (the parameters are
    in the report)."""
    machine = run.meta.get("machine") or {}
    parts = [f"run {run.label}", f"{machine.get('cpus', '?')} cores, kernel "
             f"{run.meta.get('kernel', '?')}", f"{run.meta.get('runtime', '?')} runtime"]
    if run.meta.get("scale") not in (None, "full"):
        parts.append(f"SCALE={run.meta['scale']}")
    if not run.complete:
        parts.append("INCOMPLETE RUN")
    if run.meta.get("judged_version"):  # one version's view of a run of several
        parts.append(f"{run.meta['judged_version']}'s cells")
    return " | ".join(parts)


def render(spec: PlotSpec, runs: list[Run], out_dir: Path, stem: str | None = None
           ) -> RenderedPlot:
    """Draw `spec` for one run (report) or several side by side (compare); save PNG + SVG."""
    result = RenderedPlot(name=spec.name, title=spec.title, caption=spec.caption)
    if spec.panels:
        return _render_panels(spec, runs, out_dir, stem, result)
    fig, axes = style.new_figure(len(runs))
    drawn = 0
    for run, ax in zip(runs, axes, strict=True):
        style.apply(ax)
        notes: list[str] = []
        said: list[str] = []
        try:
            said = spec.draw(run, ax, notes) or []
            drawn += 1
        except NotApplicable as exc:
            result.skipped = str(exc)
            ax.text(0.5, 0.5, f"not applicable:\n{exc}", ha="center", va="center",
                    transform=ax.transAxes, color=style.MUTED)
        except LabError as exc:
            result.error = exc.message
            ax.text(0.5, 0.5, textwrap.fill(f"no data: {exc.message}", 50), ha="center",
                    va="center", transform=ax.transAxes, color="#b00020", fontsize=9)
        prefix = f"{run.label}: " if len(runs) > 1 else ""
        result.notes.extend(prefix + n for n in notes)
        if said:
            result.readings.extend(prefix + r for r in said)
        if len(runs) > 1:
            ax.set_title(run.label + ("" if run.complete else " (incomplete)"), fontsize=10)
    if drawn == 0:
        import matplotlib.pyplot as plt

        plt.close(fig)
        return result
    for ax in axes[1:]:
        ax.set_ylabel("")  # shared y axis: the first panel carries the label
    if spec.y_from_zero and axes[0].get_autoscaley_on():
        # only now: fixing the limit earlier would stop autoscaling for the shared axes
        axes[0].set_ylim(bottom=0)
    if len(runs) > 1:
        result.skipped = result.error = None
    footer = [describe(r) for r in runs]
    style.finish(fig, spec.title, footer)
    result.png, result.svg = style.save(fig, out_dir, stem or spec.name)
    return result


def _render_panels(spec: PlotSpec, runs: list[Run], out_dir: Path, stem: str | None,
                   result: RenderedPlot) -> RenderedPlot:
    """A small-multiples plot: each run's draw function lays out its own panels."""
    fig, parts = style.new_panel_figure(len(runs))
    drawn = 0
    for run, part in zip(runs, parts, strict=True):
        notes: list[str] = []
        try:
            # the panels are made inside draw: the slide style must hold while they are
            with style.rc():
                said = spec.draw(run, part, notes) or []
            drawn += 1
        except NotApplicable as exc:
            result.skipped = str(exc)
            part.text(0.5, 0.5, f"not applicable:\n{exc}", ha="center", va="center",
                      color=style.MUTED)
            said = []
        except LabError as exc:
            result.error = exc.message
            part.text(0.5, 0.5, textwrap.fill(f"no data: {exc.message}", 50), ha="center",
                      va="center", color="#b00020")
            said = []
        prefix = f"{run.label}: " if len(runs) > 1 else ""
        result.notes.extend(prefix + n for n in notes)
        result.readings.extend(prefix + r for r in said)
        if len(runs) > 1:
            part.suptitle(run.label + ("" if run.complete else " (incomplete)"), fontsize=13)
    if drawn == 0:
        import matplotlib.pyplot as plt

        plt.close(fig)
        return result
    if len(runs) > 1:
        result.skipped = result.error = None
    style.finish(fig, spec.title, [describe(r) for r in runs])
    result.png, result.svg = style.save(fig, out_dir, stem or spec.name)
    return result
