// Command dnsload is the lab's fallback-aware DNS load generator (F1, mobile-core TCP fallback).
//
// `dnsload run` sends queries from a dnsperf-style file at a paced, open-loop rate over UDP
// (EDNS0) and retries every truncated answer over TCP, as a mobile core's MME does; it prints
// per-second and total figures as JSON lines. `dnsload serve` is a trivial canned responder
// used to calibrate the generator (it can set TC on a fraction of answers and serves TCP).
//
// Both refuse any address that is not loopback or in 198.18.0.0/15 (benchmarking space), and
// both stop by themselves after a bounded duration.
package main

import (
	"fmt"
	"os"
)

const usage = `usage: dnsload run   -s ADDR:PORT -d QUERYFILE -Q QPS -l SECONDS [options]
       dnsload serve -a ADDR:PORT -l SECONDS [options]
run 'dnsload run -h' or 'dnsload serve -h' for the options`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runMain(os.Args[2:])
	case "serve":
		err = serveMain(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Println(usage)
		return
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dnsload: error: %v\n", err)
		os.Exit(1)
	}
}
