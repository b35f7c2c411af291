"""Statistics for repeated measurements: the interval of a figure over its repetitions (every
finding's claims), and whether a profile differs (F5 `tcp-sysctl`).

Intervals (`Interval`: the figure, its bounds, the repetitions it is over and the method), at
CONFIDENCE (95 %, two-sided) unless a claim says otherwise:
- `mean_interval`: Student's t interval of a mean (the figure is a mean of repetitions: F3's
  first-failure ratio over cold starts). Exact for normal repetitions, and with 3 of them its
  t(2) = 4.30 makes the interval as wide as three repetitions deserve; a bootstrap of 3
  values would take at most 10 distinct resamples and be far narrower than 95 %.
- `ratio_of_means_interval`: Fieller's interval of a ratio of two means (F3's XoT/TCP mean
  time per zone), paired (the two measured back to back per repetition: their covariance
  enters) or independent (Welch-Satterthwaite degrees of freedom). Fieller rather than a
  delta-method or bootstrap interval because it stays exact for normal means at any n and
  says when the denominator itself is not told from zero (an unbounded interval).
- `ratio_of_medians_interval`: a seeded percentile bootstrap of a ratio of two medians (F6's
  and F2's figures are medians of trials, for which no closed form exists), resampling
  trials by round when the two were measured in the same rounds.
- `median_interval`: a seeded percentile bootstrap of one median.
- `rank_ratio_interval`: the relative change of one group of trials against another with
  the interval its one-sided Mann-Whitney tests give (F5's and F4's rank tests: the same
  test decides, and what it cannot tell becomes "inconclusive").
- `poisson_ratio_interval`: the ratio of two event rates (counts per step) with the exact
  conditional (Clopper-Pearson) interval: F1's queue symptoms, where a handful of dropped SYNs
  is all a step counts.
- `repetitions_to_decide`: how many repetitions would put an interval on one side of a band
  edge, from the spread observed (see its docstring).

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
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

ALPHA = 0.05
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 20261127  # fixed: the same run always gets the same interval
MAX_REPETITIONS = 1000  # beyond this, "no practical number of repetitions decides it"

T_METHODS = ("t", "Fieller")
# intervals one run gives without repetitions: a count carries its own spread
WITHIN_ONE_RUN = ("exact Poisson",)


@dataclass(frozen=True)
class Interval:
    """A figure over its repetitions and its two-sided interval at `level`: `low`/`high`
    are -inf/+inf where the data cannot bound it (Fieller's denominator not told from
    zero), and both equal `estimate` when there is a single repetition (`n` < 2: no spread,
    no interval). `method`: "t", "Fieller" or "bootstrap"; `n`: the repetitions (the
    smaller group's for two groups), `paired`: whether two groups were measured in pairs."""

    estimate: float
    low: float
    high: float
    n: int
    method: str
    level: float = CONFIDENCE
    paired: bool = False
    counted: str = "repetitions"  # what n counts, as said ("trials", "cold starts")

    def of(self, counted: str) -> Interval:
        """The same interval, its n said as `counted`."""
        return replace(self, counted=counted)

    @property
    def single(self) -> bool:
        return self.n < 2

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def describe(self) -> str:
        """How the interval was made, e.g. "95 % Fieller interval over 3 paired repetitions"."""
        if self.single:
            return "a single measurement: no interval"
        kind = {"t": "t interval", "Fieller": "Fieller interval",
                "bootstrap": "bootstrap interval",
                "Mann-Whitney": "interval of the Mann-Whitney tests",
                "exact Poisson": "exact Poisson interval"}.get(self.method,
                                                                           self.method)
        return (f"{self.level * 100:.0f} % {kind} over {self.n} "
                f"{'paired ' if self.paired else ''}{self.counted}")

    def to_dict(self) -> dict[str, Any]:
        def finite(value: float) -> float | None:
            return float(value) if math.isfinite(value) else None

        return {"estimate": float(self.estimate), "low": finite(self.low),
                "high": finite(self.high), "n": self.n, "method": self.method,
                "level": self.level, "paired": self.paired, "counted": self.counted}


def _single(values: np.ndarray, estimate: float, method: str) -> Interval:
    return Interval(estimate, estimate, estimate, len(values), method)


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    data = np.asarray(values, dtype=float)
    return data[np.isfinite(data)]


def mean_interval(values: Sequence[float] | np.ndarray,
                  level: float = CONFIDENCE) -> Interval:
    """Student's t interval of the mean of `values` (non-finite values dropped)."""
    data = _clean(values)
    if not len(data):
        raise ValueError("no finite value to take the mean of")
    mean = float(data.mean())
    if len(data) < 2:
        return _single(data, mean, "t")
    half = float(stats.t.ppf((1 + level) / 2, len(data) - 1)) * float(
        data.std(ddof=1)) / math.sqrt(len(data))
    return Interval(mean, mean - half, mean + half, len(data), "t", level)


def _ratio_samples(numerator: Sequence[float] | np.ndarray,
                   denominator: Sequence[float] | np.ndarray, paired: bool,
                   what: str) -> tuple[np.ndarray, np.ndarray]:
    """The finite values of a ratio's two samples: paired, a round is kept only when both of
    its values are finite; else each sample is cleaned on its own."""
    a_values, b_values = np.asarray(numerator, float), np.asarray(denominator, float)
    if paired:
        if len(a_values) != len(b_values):
            raise ValueError("paired samples must have the same length")
        keep = np.isfinite(a_values) & np.isfinite(b_values)
        a_values, b_values = a_values[keep], b_values[keep]
    else:
        a_values, b_values = _clean(a_values), _clean(b_values)
    if not len(a_values) or not len(b_values):
        raise ValueError(f"no finite value to take the {what} of")
    return a_values, b_values


def ratio_of_means_interval(numerator: Sequence[float] | np.ndarray,
                            denominator: Sequence[float] | np.ndarray, *,
                            paired: bool = False, level: float = CONFIDENCE) -> Interval:
    """Fieller's interval of mean(numerator) / mean(denominator).

    The ratio R is bounded by the values for which (mean_a - R mean_b) is within t standard
    errors of zero: (a - R b)^2 = t^2 (v_a - 2 R c + R^2 v_b), with v_a, v_b the variances of
    the two means and c their covariance (paired: the sample covariance / n; independent:
    0, with Welch-Satterthwaite's degrees of freedom at the estimate). When b is not itself
    told from zero (g = t^2 v_b / b^2 >= 1) no finite interval exists: (-inf, +inf)."""
    a_values, b_values = _ratio_samples(numerator, denominator, paired, "ratio of means")
    a, b = float(a_values.mean()), float(b_values.mean())
    if b == 0:
        raise ValueError("the denominator's mean is zero")
    ratio = a / b
    n = min(len(a_values), len(b_values))
    if n < 2:
        return Interval(ratio, ratio, ratio, n, "Fieller", level, paired)
    v_a = float(a_values.var(ddof=1)) / len(a_values)
    v_b = float(b_values.var(ddof=1)) / len(b_values)
    if paired:
        cov = float(np.cov(a_values, b_values, ddof=1)[0, 1]) / n
        df = float(n - 1)
    else:
        cov = 0.0
        parts = (v_a, ratio ** 2 * v_b)
        denominator_df = (parts[0] ** 2 / (len(a_values) - 1)
                          + parts[1] ** 2 / (len(b_values) - 1))
        df = (sum(parts) ** 2 / denominator_df) if denominator_df > 0 else float(n - 1)
    t = float(stats.t.ppf((1 + level) / 2, max(df, 1.0)))
    quad = b * b - t * t * v_b
    if quad <= 0:  # the denominator's mean is not told from zero
        return Interval(ratio, -math.inf, math.inf, n, "Fieller", level, paired)
    mid = a * b - t * t * cov
    disc = mid * mid - quad * (a * a - t * t * v_a)
    root = math.sqrt(max(disc, 0.0))
    low, high = (mid - root) / quad, (mid + root) / quad
    return Interval(ratio, min(low, ratio), max(high, ratio), n, "Fieller", level, paired)


def _bootstrap_bounds(draws: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2 * 100
    return float(np.percentile(draws, tail)), float(np.percentile(draws, 100 - tail))


def median_interval(values: Sequence[float] | np.ndarray, level: float = CONFIDENCE,
                    resamples: int = BOOTSTRAP_RESAMPLES,
                    seed: int = BOOTSTRAP_SEED) -> Interval:
    """A seeded percentile bootstrap interval of the median of `values`."""
    data = _clean(values)
    if not len(data):
        raise ValueError("no finite value to take the median of")
    median = float(np.median(data))
    if len(data) < 2:
        return _single(data, median, "bootstrap")
    rng = np.random.default_rng(seed)
    draws = np.median(data[rng.integers(0, len(data), (resamples, len(data)))], axis=1)
    low, high = _bootstrap_bounds(draws, level)
    return Interval(median, min(low, median), max(high, median), len(data), "bootstrap",
                    level)


def ratio_of_medians_interval(numerator: Sequence[float] | np.ndarray,
                              denominator: Sequence[float] | np.ndarray, *,
                              paired: bool = False, level: float = CONFIDENCE,
                              resamples: int = BOOTSTRAP_RESAMPLES,
                              seed: int = BOOTSTRAP_SEED) -> Interval:
    """A seeded percentile bootstrap interval of median(numerator) / median(denominator):
    paired, the same rounds are drawn for both (two transports measured in the same
    rounds); else each group is drawn on its own. With fewer than ~10 values a percentile
    bootstrap is narrower than its nominal level (a median of 5 trials takes one of 5
    values): claims that use it need at least 3 trials and say their n."""
    a_values, b_values = _ratio_samples(numerator, denominator, paired, "ratio of medians")
    ratio = float(np.median(a_values)) / float(np.median(b_values))
    n = min(len(a_values), len(b_values))
    if n < 2:
        return Interval(ratio, ratio, ratio, n, "bootstrap", level, paired)
    rng = np.random.default_rng(seed)
    if paired:
        index = rng.integers(0, n, (resamples, n))
        tops, bottoms = a_values[index], b_values[index]
    else:
        tops = a_values[rng.integers(0, len(a_values), (resamples, len(a_values)))]
        bottoms = b_values[rng.integers(0, len(b_values), (resamples, len(b_values)))]
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = np.median(tops, axis=1) / np.median(bottoms, axis=1)
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return Interval(ratio, -math.inf, math.inf, n, "bootstrap", level, paired)
    low, high = _bootstrap_bounds(draws, level)
    return Interval(ratio, min(low, ratio), max(high, ratio), n, "bootstrap", level, paired)


def rank_ratio_interval(other: Sequence[float] | np.ndarray,
                        base: Sequence[float] | np.ndarray,
                        alpha: float = ALPHA) -> Interval:
    """The relative change of `other` against `base` (median(other) / median(base) - 1) with
    the interval its own one-sided Mann-Whitney tests give: the changes d for which neither
    "other above base x (1 + d)" nor "other below it" is significant at `alpha`, i.e. a
    (1 - 2 alpha) interval (the inverted test; 90 % for the usual 0.05). A band edge outside
    it is what the rank test tells apart at `alpha`; one inside it, what it cannot: F5's
    claims keep their tests and map "cannot tell" to inconclusive through it."""
    from scipy.stats import mannwhitneyu

    a, b = _clean(other), _clean(base)
    if not len(a) or not len(b):
        raise ValueError("no finite value to compare")
    estimate = float(np.median(a)) / float(np.median(b)) - 1
    n = min(len(a), len(b))
    level = 1 - 2 * alpha
    if n < 2 or np.all(a == a[0]) and np.all(b == b[0]):
        return Interval(estimate, estimate, estimate, n, "Mann-Whitney", level)

    def p_above(ratio: float) -> float:
        return float(mannwhitneyu(a, b * ratio, alternative="greater").pvalue)

    def p_below(ratio: float) -> float:
        return float(mannwhitneyu(a, b * ratio, alternative="less").pvalue)

    positive = a[a > 0] if np.any(a > 0) else a
    span_low = max(float(positive.min()) / float(b.max()), 1e-9) / 2
    span_high = float(a.max()) / max(float(b[b > 0].min()) if np.any(b > 0) else 1e-9,
                                     1e-9) * 2

    def bound(significant: Callable[[float], bool], rising: bool) -> float:
        """The ratio where `significant` stops (rising: holds below it) by bisection in
        log space."""
        low, high = math.log(span_low), math.log(span_high)
        for _ in range(32):  # 2^-32 of the span: far finer than any figure is printed
            mid = (low + high) / 2
            if significant(math.exp(mid)) == rising:
                low = mid
            else:
                high = mid
        return math.exp((low + high) / 2)

    lower = bound(lambda r: p_above(r) < alpha, rising=True) - 1
    upper = bound(lambda r: p_below(r) >= alpha, rising=True) - 1
    return Interval(estimate, min(lower, estimate), max(upper, estimate), n, "Mann-Whitney",
                    level)


def poisson_ratio_interval(count: int, exposure: float, base_count: int, base_exposure: float,
                           level: float = CONFIDENCE) -> Interval:
    """The ratio of two event rates, (count / exposure) / (base_count / base_exposure), with
    its exact conditional interval: given the total, `count` is binomial with p = the first
    rate's share of it, so the Clopper-Pearson interval of p maps to the ratio
    p / (1 - p) x base_exposure / exposure (F1's queue symptoms: SYNs dropped in a tuned
    step against the untuned failing step's, counts where 3 against 1 and 73 against 0 are
    both possible). The estimate is 0 without `count`, the upper bound unbounded without
    `base_count`; `n` is the events counted (at least 2: a count is its own spread)."""
    total = count + base_count
    if total == 0:
        raise ValueError("no events counted: no rate to compare")
    ci = stats.binomtest(count, total).proportion_ci(confidence_level=level, method="exact")

    def ratio(share: float) -> float:
        return math.inf if share >= 1 else share / (1 - share) * base_exposure / exposure

    estimate = ratio(count / total)
    return Interval(estimate, ratio(ci.low), ratio(ci.high), max(total, 2), "exact Poisson",
                    level, counted="events counted")


def _critical(method: str, n: int, level: float) -> float:
    """The multiplier an interval of `n` repetitions has: t(n - 1) for t and Fieller
    intervals, the normal's for a bootstrap."""
    if method in T_METHODS:
        return float(stats.t.ppf((1 + level) / 2, max(n - 1, 1)))
    return float(stats.norm.ppf((1 + level) / 2))


def repetitions_to_decide(interval: Interval, edge: float) -> int | None:
    """How many repetitions would decide a figure whose interval straddles `edge`, at the
    spread observed: the interval's half-width toward the edge, h, shrinks as
    critical(n) / sqrt(n) (the spread per repetition staying what this run showed), so the
    answer is the smallest n > interval.n with h x sqrt(n0 / n) x critical(n) / critical(n0)
    < |estimate - edge|. None when the figure sits on the edge, the interval is unbounded
    or has no spread to scale, or more than MAX_REPETITIONS would be needed: no practical
    number decides it, the figure is as near the edge as the band can tell."""
    distance = abs(interval.estimate - edge)
    half = (interval.high - interval.estimate if edge > interval.estimate
            else interval.estimate - interval.low)
    if interval.single or distance == 0 or not math.isfinite(half) or half <= 0:
        return None
    n0 = interval.n
    base = _critical(interval.method, n0, interval.level)
    for n in range(n0 + 1, MAX_REPETITIONS + 1):
        if half * math.sqrt(n0 / n) * _critical(interval.method, n, interval.level) / base \
                < distance:
            return n
    return None


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
    `cliffs_delta`, `hedges_g`, `dunn_p`, `tukey_p`, `significant` (both tests below alpha),
    and `dunn_p_fdr_tsbky`: Dunn's p with the two-stage FDR correction the DIINER study's own
    code applied (F5's seed, DNScalc `data.py` `dunns`: `p_adjust='fdr_tsbky'`, read as
    significant at p <= 0.15), so a claim can quote the study's reading beside the lab's.
    """
    # imported here: claims import this module for its intervals, and these two take a second
    import scikit_posthocs as sp
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    if control not in set(df[group]):
        raise ValueError(f"control group {control!r} has no trials")
    clean = df[[group, value]].dropna()
    constant = clean[value].nunique() <= 1  # both tests divide by the spread: no evidence
    dunn = None if constant else sp.posthoc_dunn(clean, val_col=value, group_col=group,
                                                 p_adjust="holm")
    dunn_fdr = None if constant else sp.posthoc_dunn(clean, val_col=value, group_col=group,
                                                     p_adjust="fdr_tsbky")
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
            "dunn_p_fdr_tsbky": 1.0 if dunn_fdr is None else float(dunn_fdr.loc[name, control]),
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
