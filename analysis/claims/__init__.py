"""Claim tests, one module per finding (`f<N>_<topic>.py`), run by `analysis.verdicts` with pytest.

Each test is registered with `analysis.claim.claim` (published figure, source, tolerance) and
receives the `run` and `verdict` fixtures; the module docstrings say which files and fields
of a run each claim reads.
"""
