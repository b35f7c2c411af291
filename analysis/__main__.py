"""Entry point for `python -m analysis`."""

from analysis.cli import main

main()
