"""F2 plots: dnsdist's answered queries per variant beside the generator's ceiling."""

from __future__ import annotations

from matplotlib.axes import Axes

from analysis import style
from analysis.plots import plot
from analysis.rundata import NotApplicable, Run


@plot("dnsdist_qps", title="dnsdist answered queries per second by variant",
      caption="ceiling: the load generator against the cheapest responder, in the same run.")
def dnsdist_qps(run: Run, ax: Axes, notes: list[str]) -> None:
    cells = run.cells_where(variant="*") or run.cells_where(profile="*")
    if not cells:
        raise NotApplicable("no cells with a variant or profile param")
    labels = [str(c.params.get("variant", c.params.get("profile"))) for c in cells]
    values = [float(c.figure("qps")) for c in cells]
    failures = [float(c.figure("failures_per_s", optional=True) or 0) for c in cells]
    bars = ax.bar(range(len(cells)), values, width=0.6,
                  color=style.colors_for(labels))
    ax.bar_label(bars, labels=[f"{v:,.0f} qps\n{f:,.0f} failed/s"
                               for v, f in zip(values, failures, strict=True)],
                 fontsize=9, color=style.MUTED)
    ax.set_xticks(range(len(cells)), labels)
    ax.set_ylabel("answered queries (queries/s)")
