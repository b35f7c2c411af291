"""F3 (seed 002): zone transfers, from the smallest zone to a TLD, and a cold-start secondary
with 30,000 zones running out of ephemeral ports. The experiments (`xfr-30k-zones`,
`xfr-zone-sweep`, `xfr-tld`, `xfr-smallest`), procedures, the port-range calibration, claims,
plots, derived figures and fixtures are this package.
"""
