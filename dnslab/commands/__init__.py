"""CLI subcommands, one module each (lab, experiment, bench)."""
