"""Experiment procedures: one module per family, one function per procedure named in an
experiment file (`procedure: xfr.cold_start`)."""
