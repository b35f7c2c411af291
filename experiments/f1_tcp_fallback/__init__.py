"""F1 (seed 000): a 4G mobile core's 3GPP TS 29.303 NAPTR answers grew past the UDP size, so a
quarter of the queries fell back to TCP and the authoritative BIND's capacity halved.
The experiments (`tcp-fallback`, `tcp-fallback-cache`), their procedures, claims, plots and
fixtures are this package; NOTES.md has the published figures and the lab's results.
"""
