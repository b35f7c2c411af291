"""dnslab: a DNS performance lab on containerlab or Linux network namespaces.

The package holds the lab engine (topologies, config rendering, runtimes), the experiment
runner, sysctl profiles and node monitors. Zone generators live in `zones`, experiment
definitions in `experiments`, and the claim checks, plots and reports in `analysis`.
"""

__version__ = "0.1.0"
