package main

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// labSpace is the RFC 2544 benchmarking range the lab's namespaces use.
var labSpace = netip.MustParsePrefix("198.18.0.0/15")

// checkTarget parses "ip:port" and refuses anything that is not loopback or lab space.
// Host names are refused too: resolving them would itself be DNS traffic.
func checkTarget(hostport string) (netip.AddrPort, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q is not IP:PORT", hostport)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q is not an IP literal (host names are not resolved)", host)
	}
	addr = addr.Unmap()
	if !addr.IsLoopback() && !labSpace.Contains(addr) {
		return netip.AddrPort{}, fmt.Errorf("refusing target %s: only loopback or 198.18.0.0/15 (lab space) are allowed", addr)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return netip.AddrPort{}, fmt.Errorf("bad port %q", portStr)
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}
