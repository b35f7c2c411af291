"""Why F6's DoH load keeps a GET's :path out of the HPACK table (bench/kresd_doh_get.py, a
stand-alone Knot Resolver in a throwaway namespace): kresd 5.7 decodes each request in place
over its own unread input, so a repeated :path sent as a 1-byte index (Go's encoder default)
lets the decoded queries overwrite frames not yet read, and kresd ends the connection
(GOAWAY FRAME_SIZE_ERROR); a :path kept out of the table (dnsload's default; nghttp2 keeps it
out too) loses nothing under the same load. 2 s each way."""

from __future__ import annotations

import pytest

from bench.kresd_doh_get import default_root, dnsload_stream

pytestmark = pytest.mark.integration


def test_kresd_answers_every_get_with_a_literal_path_and_drops_connections_with_an_indexed_one():
    root = default_root()
    literal = dnsload_stream(False, conns=1, outstanding=25, rate=2000, seconds=2, root=root)
    assert literal["doh_index_path"] is False, "build/bin/dnsload is older: make dnsload"
    assert literal["reconnects"] == 0 and literal["answered"] == literal["sent"] > 3000, literal
    indexed = dnsload_stream(True, conns=1, outstanding=25, rate=2000, seconds=2, root=root)
    assert indexed["doh_index_path"] is True
    # the server's defect, kept in view: if a Knot Resolver version no longer trips on it,
    # F6's NOTES and dnsload's -doh-index-path comment say so
    assert indexed["reconnects"] > 10 and indexed["answered"] < indexed["sent"], indexed
