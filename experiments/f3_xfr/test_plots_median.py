"""F3's median line over repetitions (plots.median_line): drawn while every repetition runs,
so it never jumps when one of them ends."""

from __future__ import annotations

import numpy as np

from experiments.f3_xfr.plots import median_line


def test_the_median_stops_where_the_first_repetition_ends() -> None:
    t = np.arange(0.0, 61.0)
    series = [(t[:55], 500 * t[:55]), (t, 480 * t), (t[:58], 520 * t[:58])]
    grid, median = median_line(series)
    assert grid[-1] == 54.0
    assert np.allclose(median, 500 * grid)  # the middle one throughout, no jump


def test_a_cumulative_count_keeps_its_last_value_after_its_cell_ended() -> None:
    series = [(np.array([0.0, 10.0]), np.array([0.0, 5.0])),
              (np.array([0.0, 20.0]), np.array([0.0, 9.0])),
              (np.array([0.0, 30.0]), np.array([0.0, 7.0]))]
    grid, median = median_line(series, cumulative=True)
    assert grid[-1] == 30.0 and median[-1] == 7.0
