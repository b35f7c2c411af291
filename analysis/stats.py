"""Statistics for repeated-trial experiments (F5 `tcp-sysctl`): is a profile different?

Pure functions over pandas data: one row per trial with a group column (the sysctl profile)
and one or more measures (qps, latency). The DIINER study behind F5 ran >= 20 dnsperf trials
per setting and used Kruskal-Wallis, then Dunn's and Tukey's post hoc tests, because the
run-to-run spread of dnsperf hides most effects; the same sequence is here:

- `spread`: per group n, mean, median, standard deviation, coefficient of variation, IQR;
- `kruskal`: Kruskal-Wallis H test over all groups (rank based, no normality assumption),
  with epsilon-squared as its effect size;
- `posthoc_vs_control`: Dunn's test (Holm-corrected, scikit-posthocs) and Tukey's HSD
  (statsmodels) of every group against the control group, with the relative difference of
  medians, Cliff's delta and Hedges' g as effect sizes;
- `compare`: all of it for one measure, and the list of groups that differ significantly.

F5's derive hook (`experiments/f5_tcp_sysctl/derived.py`) loads a run's trials into that frame
and writes the run's `stats.json` with these functions (the analysis does, never the procedure).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scikit_posthocs as sp
from scipy import stats
from statsmodels.stats.multicomp import pairwise_tukeyhsd

ALPHA = 0.05


def spread(df: pd.DataFrame, group: str, value: str) -> pd.DataFrame:
    """Per group: n, mean, median, std, cv (std / mean), iqr, min, max of `value`."""
    g = df.groupby(group)[value]
    out = pd.DataFrame({
        "n": g.count(), "mean": g.mean(), "median": g.median(), "std": g.std(ddof=1),
        "min": g.min(), "max": g.max(),
        "iqr": g.quantile(0.75) - g.quantile(0.25),
    })
    out["cv"] = out["std"] / out["mean"]
    return out


def cliffs_delta(a: np.ndarray, b: np.ndarray) -> float:
    """P(a > b) - P(a < b) over all pairs: -1..1, 0 when the distributions overlap fully."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not len(a) or not len(b):
        return float("nan")
    diff = a[:, None] - b[None, :]
    return float((np.sum(diff > 0) - np.sum(diff < 0)) / diff.size)


def hedges_g(a: np.ndarray, b: np.ndarray) -> float:
    """Standardised mean difference (a - b) with the small-sample correction."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return float("nan")
    pooled = np.sqrt(((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / (na + nb - 2))
    if pooled == 0:
        same = a.mean() == b.mean()
        return float("nan") if same else float(np.sign(a.mean() - b.mean()) * np.inf)
    correction = 1 - 3 / (4 * (na + nb) - 9)
    return float((a.mean() - b.mean()) / pooled * correction)


@dataclass
class KruskalResult:
    h: float
    p: float
    epsilon_squared: float  # H / (n - 1): share of rank variance explained by the groups
    groups: int
    n: int


def kruskal(df: pd.DataFrame, group: str, value: str) -> KruskalResult:
    """Kruskal-Wallis H over every group with at least one value."""
    samples = [s.to_numpy(float) for _, s in df.groupby(group)[value] if len(s)]
    n = sum(len(s) for s in samples)
    if len(samples) < 2:
        return KruskalResult(float("nan"), float("nan"), float("nan"), len(samples), n)
    pooled = np.concatenate(samples)
    if np.all(pooled == pooled[0]):  # every value identical: no evidence of a difference
        return KruskalResult(0.0, 1.0, 0.0, len(samples), n)
    h, p = stats.kruskal(*samples)
    return KruskalResult(float(h), float(p), float(h / (n - 1)) if n > 1 else float("nan"),
                         len(samples), n)


def posthoc_vs_control(df: pd.DataFrame, group: str, value: str, control: str,
                       alpha: float = ALPHA) -> pd.DataFrame:
    """Every other group against `control`: Dunn (Holm) and Tukey HSD p-values, effect sizes.

    Columns: `median`, `control_median`, `rel_diff` ((median - control) / control),
    `cliffs_delta`, `hedges_g`, `dunn_p`, `tukey_p`, `significant` (both tests below alpha).
    """
    if control not in set(df[group]):
        raise ValueError(f"control group {control!r} has no trials")
    clean = df[[group, value]].dropna()
    constant = clean[value].nunique() <= 1  # both tests divide by the spread: no evidence
    dunn = None if constant else sp.posthoc_dunn(clean, val_col=value, group_col=group,
                                                 p_adjust="holm")
    tukey_p: dict[tuple[str, str], float] = {}
    if not constant:
        tukey = pairwise_tukeyhsd(clean[value].to_numpy(float),
                                  clean[group].astype(str).to_numpy(), alpha=alpha)
        names = [str(n) for n in tukey.groupsunique]
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
        for (a, b), p in zip(pairs, tukey.pvalues, strict=True):
            tukey_p[(a, b)] = tukey_p[(b, a)] = float(p)
    base = clean.loc[clean[group] == control, value].to_numpy(float)
    rows = []
    for name, sample in clean.groupby(group)[value]:
        if name == control:
            continue
        values = sample.to_numpy(float)
        dunn_p = 1.0 if dunn is None else float(dunn.loc[name, control])
        t_p = 1.0 if constant else tukey_p.get((str(name), str(control)), float("nan"))
        med, cmed = float(np.median(values)), float(np.median(base))
        rows.append({
            group: name, "n": len(values), "median": med, "control_median": cmed,
            "rel_diff": (med - cmed) / cmed if cmed else float("nan"),
            "cliffs_delta": cliffs_delta(values, base), "hedges_g": hedges_g(values, base),
            "dunn_p": dunn_p, "tukey_p": t_p,
            "significant": bool(dunn_p < alpha and t_p < alpha),
        })
    return pd.DataFrame(rows).set_index(group) if rows else pd.DataFrame()


@dataclass
class Comparison:
    """Everything about one measure: the omnibus test, the post hoc table, the spread."""

    value: str
    control: str
    kruskal: KruskalResult
    posthoc: pd.DataFrame
    spread: pd.DataFrame
    differs: list[str] = field(default_factory=list)  # groups significantly != control

    def to_dict(self) -> dict[str, Any]:
        def table(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
            return json.loads(frame.to_json(orient="index")) if not frame.empty else {}

        return {"value": self.value, "control": self.control,
                "kruskal": asdict(self.kruskal), "posthoc": table(self.posthoc),
                "spread": table(self.spread), "differs": self.differs}


def compare(df: pd.DataFrame, group: str, value: str, control: str,
            alpha: float = ALPHA) -> Comparison:
    """Kruskal-Wallis; when it rejects, post hoc tests against `control`.

    A group `differs` only when the omnibus test and both post hoc tests are below `alpha`
    (the post hoc table is computed either way, for the report).
    """
    kw = kruskal(df, group, value)
    post = posthoc_vs_control(df, group, value, control, alpha)
    differs = []
    if kw.p < alpha and not post.empty:
        differs = [str(name) for name in post.index[post["significant"]]]
    return Comparison(value, control, kw, post, spread(df, group, value), differs)
