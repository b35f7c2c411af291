"""Experiments: one package per published finding (`f<N>_<topic>/`: its experiment files,
procedures, claims, plots, derived figures, fixtures and notes; found by `dnslab.findings`),
the sysctl profiles they share (`profiles/`), the load generators they drive
(`generators/`) and small helpers (`common.py`)."""
