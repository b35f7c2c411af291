"""Thresholds more than one part of the lab judges by, defined once: the procedures (while a
run goes on), the analysis (claims, plots) and the benchmarks read them from here, so a
change reaches all of them. A threshold only one finding's package uses stays in that
package (`tests/unit/test_thresholds.py` finds a constant defined twice anywhere)."""

from __future__ import annotations

# a rate within 10 % of the load generator's ceiling (measured in the same run, on the same
# placement) measured the generator, not the server: "generator-limited"
GENERATOR_BOUND_SHARE = 0.9

# tcp-sysctl: a trial that answered at least this share of the rate it offered was not
# saturated, so a profile cannot show more qps there (the procedure says so after the first
# default cell; the F5 claims are "not applicable" at such a load)
SATURATED_SHARE = 0.97

# a run is quiet when processes outside the lab used at most this much of one core (%) on
# average while a cell ran (`other_pct`, monitor/cores.csv): claims about a spread between
# repetitions need a quiet machine, and a report says how busy it was
QUIET_OTHER_LOAD_PCT = 10.0
