// Command dnsload is the lab's fallback-aware DNS load generator (F1, mobile-core TCP fallback).
//
// `dnsload run` sends queries from a dnsperf-style file at a paced, open-loop rate over UDP
// (EDNS0) and retries every truncated answer over TCP, as a mobile core's MME does; it prints
// per-second and total figures as JSON lines. `dnsload stream` keeps queries in flight over
// persistent TCP, DNS-over-TLS or DNS-over-HTTPS connections (stream.go). `dnsload serve` is
// a trivial canned responder used to calibrate the generators (it can set TC on a fraction
// of answers and serves TCP, DoT and DoH).
//
// Both refuse any address that is not loopback or in 198.18.0.0/15 (benchmarking space), and
// both stop by themselves after a bounded duration.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `usage: dnsload run   -s ADDR:PORT -d QUERYFILE -Q QPS -l SECONDS [options]
       dnsload stream -s ADDR:PORT -m tcp|dot|doh -d QUERYFILE -c CONNS -q OUTSTANDING -l SECONDS [options]
       dnsload serve -a ADDR:PORT -l SECONDS [options]
run 'dnsload run -h', 'dnsload stream -h' or 'dnsload serve -h' for the options`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runMain(os.Args[2:])
	case "stream":
		err = streamMain(os.Args[2:])
	case "serve":
		err = serveMain(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Println(usage)
		return
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) { // -h: the flags printed their usage
		fmt.Fprintf(os.Stderr, "dnsload: error: %v\n", err)
		os.Exit(1)
	}
}

// jsonLines returns an emitter that writes each value as one JSON line to w, flushed at once
// (a reader sees every line as it is printed).
func jsonLines(w io.Writer) func(any) {
	out := bufio.NewWriter(w)
	return func(v any) {
		b, _ := json.Marshal(v)
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
}
