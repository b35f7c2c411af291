"""Why Knot Resolver 5.7 closes DoH connections under `dnsload stream -m doh` GET load: the
study behind F6's note (experiments/f6_transport_cost/NOTES.md, "Why Knot Resolver closes
them"). In a throwaway network namespace (its loopback only), a stand-alone kresd answers one
name from `hints` over DoH; dnsload sends GET requests for that one name (message ID 0, as
RFC 8484 suggests, so every :path is the same), the :path either kept out of the HPACK table
(dnsload's default; nghttp2, under dnsperf and curl, keeps it out too) or HPACK-indexed
(`-doh-index-path`, Go's encoder default: the repeated :path goes as a 1-byte index). Printed:
queries sent and answered, and the connections dnsload had to open again.

    python -m bench.kresd_doh_get [--root build/rootfs/<kresd root>] [--conns 1]
        [--outstanding 25] [--rate 2000] [--seconds 3]

The mechanism, read in Knot Resolver 5.7's daemon/io.c and daemon/http.c: TLS decrypts into
the free space of the session's wire buffer, and http_process_input_data() writes each decoded
query (2-byte length + message) back to the start of that same free space while nghttp2 is
still reading the rest of the input from it. That is safe while the requests read so far are
longer than the queries written (a GET's :path carries the query in base64url; a POST's DATA
frame carries it whole). A :path sent as a 1-byte index makes a request 14 bytes (a 9-byte
frame header, five 1-byte fields) against 33 bytes written (this study's 31-byte query and
its length), so with several requests in one read the decoded queries overwrite frames
nghttp2 has not read yet, and it reads a frame whose declared length is garbage: GOAWAY
FRAME_SIZE_ERROR. Measured 2026-11-28 (kresd 5.7.5, Debian 13):
tests/integration/test_kresd_doh.py. Nothing leaves the namespace.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from bench.study_namespace import study_namespace
from dnslab import certificates, paths
from dnslab.runtime import rootfs
from dnslab.wait import wait_until

NETNS = "dnslab-kresd-doh-study"
ADDRESS = "127.0.0.1"
DOH_PORT = 8443
NAME = "www.study.lab."


def kresd_config(work: Path) -> str:
    """One kresd: DoH on the namespace's loopback, NAME from hints, root hints to an address
    of the namespace where nothing listens (it never reaches a real root), no trust anchor."""
    return "\n".join([
        f"net.listen('{ADDRESS}', {DOH_PORT}, {{ kind = 'doh2' }})",
        f"net.tls('{work}/tls.crt', '{work}/tls.key')",
        "net.tcp_pipeline(1000)",
        "log_level('notice')",
        "modules.load('hints > iterate')",
        "hints.root({['a.root.lab.'] = '127.0.0.2'})",
        "_hint_root_file = function() error('no real root') end",
        f"hints['{NAME.rstrip('.')}'] = '198.18.0.99'",
        "trust_anchors.remove('.')",
        "modules.unload('ta_update')",
        "modules.unload('ta_signal_query')",
        "modules.unload('detect_time_skew')",
        f"cache.open(10 * MB, 'lmdb://{work}/cache')",
    ]) + "\n"


def default_root() -> Path:
    """The root file system of the lab's Knot Resolver (its default version; made now with
    debootstrap when missing, as a netns lab makes it)."""
    return rootfs.ensure_root(rootfs.suite_root("kresd"), "kresd-doh-study",
                              "the DoH study runs the lab's Knot Resolver")


def dnsload_stream(index_path: bool, conns: int, outstanding: int, rate: float,
                   seconds: float, root: Path | None = None) -> dict:
    """dnsload's total line for one GET run against a fresh kresd, with `doh_index_path` as
    dnsload's start line said it (a stale binary without the flag says nothing) and the tail
    of kresd's log (`kresd_log`)."""
    dnsload = paths.BUILD / "bin" / "dnsload"
    if not dnsload.exists():
        raise RuntimeError(f"{dnsload} is missing: run `make dnsload`")
    with tempfile.TemporaryDirectory(prefix="kresd-doh-study-", dir="/tmp") as tmp:
        work = Path(tmp)
        certificates.make(work, ADDRESS, "kresd")
        (work / "kresd.conf").write_text(kresd_config(work))
        (work / "queries").write_text(f"{NAME} A\n")
        log = work / "kresd.log"
        kresd: subprocess.Popen | None = None
        with study_namespace(NETNS, work, root) as (exec_in, in_root):
            try:
                with log.open("w") as out:
                    kresd = subprocess.Popen(
                        [*in_root, "kresd", "-n", "-c", str(work / "kresd.conf"), str(work)],
                        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                _wait_for_doh(exec_in, dnsload, work, kresd)
                argv = [*exec_in, str(dnsload), "stream", "-m", "doh", "-s",
                        f"{ADDRESS}:{DOH_PORT}", "-d", str(work / "queries"), "-c", str(conns),
                        "-q", str(outstanding), "-l", str(seconds), "-t", "2",
                        "-doh-method", "GET"]
                if rate:
                    argv += ["-Q", str(rate)]
                if index_path:
                    argv.append("-doh-index-path")
                proc = subprocess.run(argv, capture_output=True, text=True,
                                      timeout=seconds + 60)
                lines = _lines(proc.stdout)
                if "total" not in lines:
                    raise RuntimeError(f"dnsload printed no total: {proc.stderr.strip()[-300:]}")
                return {**lines["total"],
                        "doh_index_path": lines.get("start", {}).get("doh_index_path"),
                        "kresd_log": log.read_text()[-2000:]}
            finally:
                if kresd is not None:
                    kresd.kill()
                    kresd.wait()


def _lines(stdout: str) -> dict[str, dict]:
    """dnsload's JSON lines by type (the last of each)."""
    return {row.get("type", ""): row for row in
            (json.loads(line) for line in stdout.splitlines() if line.startswith("{"))}


def _wait_for_doh(exec_in: list[str], dnsload: Path, work: Path, kresd: subprocess.Popen) -> None:
    """Evidence that kresd answers over DoH: one query answered, within 10 s."""
    def answered() -> bool:
        if kresd.poll() is not None:
            raise RuntimeError("kresd exited while starting: "
                               + (work / "kresd.log").read_text()[-500:])
        proc = subprocess.run(
            [*exec_in, str(dnsload), "stream", "-m", "doh", "-s", f"{ADDRESS}:{DOH_PORT}",
             "-d", str(work / "queries"), "-c", "1", "-q", "1", "-l", "0.2", "-t", "0.5"],
            capture_output=True, text=True, timeout=30)
        return _lines(proc.stdout).get("total", {}).get("answered", 0) > 0

    wait_until(answered, 10, lambda: "kresd's DoH answer: "
               + (work / "kresd.log").read_text()[-300:], interval=0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--conns", type=int, default=1)
    parser.add_argument("--outstanding", type=int, default=25)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--seconds", type=float, default=3)
    args = parser.parse_args(argv)
    root = args.root or default_root()
    for index_path in (False, True):
        total = dnsload_stream(index_path, args.conns, args.outstanding, args.rate,
                               args.seconds, root)
        print(f":path {'indexed' if index_path else 'never indexed'}: "
              f"{total.get('answered')} of {total.get('sent')} answered, "
              f"{total.get('reconnects', 0)} reconnections")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
