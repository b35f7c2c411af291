"""F5 (seed 004): sysctl profiles for authoritative DNS over TCP, judged as the DIINER study did:
repeated dnsperf trials per profile and rank tests. The experiment (`tcp-sysctl`), its
procedure, statistics (`derived.py`), claims, plots and fixtures are this package.
"""
