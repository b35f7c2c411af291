"""The lab's TLS certificates: one self-signed ECDSA P-256 certificate per node that serves
DNS over TLS or HTTPS, made when the lab is rendered (`openssl req`, into the node folder
as `tls.crt` and `tls.key`), for the node's lab address and name, valid for 30 days.

Nothing in the lab verifies it (dnsperf does not, `dnsload stream` says it does not): it
exists so that each server can speak TLS with a key of the same kind as `dnsload serve`'s
own, so a handshake costs the servers and the generator's responder alike.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from dnslab.errors import LabError
from dnslab.servers.base import TLS_CERT, TLS_KEY

KEY_TYPE = "ECDSA P-256"


def make(node_dir: Path, address: str, name: str) -> tuple[Path, Path]:
    """A fresh certificate and key for a node in its folder; returns (certificate, key)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise LabError("openssl is missing: the lab makes its nodes' TLS certificates with it",
                       hint="sudo apt-get install -y openssl (or run: sudo make setup)")
    cert, key = node_dir / TLS_CERT, node_dir / TLS_KEY
    proc = subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "30", "-subj", f"/CN={name}.lab",
         "-addext", f"subjectAltName=IP:{address},DNS:{name}.lab",
         "-keyout", str(key), "-out", str(cert)],
        capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"openssl could not make node {name}'s certificate: "
                       + (proc.stderr.strip().splitlines() or ["no message"])[-1],
                       hint="run the same `openssl req -x509 ...` by hand")
    key.chmod(0o600)
    return cert, key
