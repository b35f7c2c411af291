"""Where things live: the repository's folders and the ignored build and results folders."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOPOLOGIES = REPO / "topologies"
TEMPLATES = TOPOLOGIES / "templates"
EXPERIMENTS = REPO / "experiments"
PROFILES = EXPERIMENTS / "profiles"
# resolved once: a node sees these folders mounted at their real path (render.node_visible_roots),
# so a symlinked build/ must not leave configs naming the link (the container cannot see it)
BUILD = Path(os.environ.get("DNSLAB_BUILD", REPO / "build")).resolve()
RESULTS = Path(os.environ.get("DNSLAB_RESULTS", REPO / "results")).resolve()
LABS_STATE = BUILD / "labs"
ZONES_BUILD = BUILD / "zones"
BIN = BUILD / "bin"
