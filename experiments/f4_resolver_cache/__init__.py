"""F4 (seed 003): Unbound under dnsperf, cold against warm cache at 100/200/300 outstanding
queries, over a lab-local emulated internet. The experiment (`resolver-cache`), its
procedure, claims, plots and fixtures are this package.
"""
