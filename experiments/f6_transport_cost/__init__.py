"""F6 (seed 005, dnsprivacy.org's measurements of 2018): what DNS over TCP, over TLS and over
HTTPS cost a server against UDP. The experiments (`transport-cost`: throughput per transport
and server; `transport-latency`: latency per transport under an emulated round trip), their
procedures, claims, plots, fixtures and alterations are this package."""
