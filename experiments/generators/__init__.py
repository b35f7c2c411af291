"""The load generators several findings drive: dnsload (UDP with TCP fallback, and its
canned responder `dnsload serve`), dnsperf and resperf (`perf`), kxdpgun (`kxdpgun`)."""
