package main

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// The calibration responder: every query gets a canned answer (an A or AAAA record for those
// types, NODATA for any other), a given fraction of UDP answers are truncated (TC=1, empty),
// and TCP answers can be padded with TXT records to the size of the seed's NAPTR answer.
// With -dot and -doh it answers over TLS and HTTPS too (encrypted.go), so a generator's
// ceiling can be measured per transport against a responder that costs next to nothing.

type serveConfig struct {
	addr       string
	duration   float64
	tcFraction float64
	tcpSize    int
	udpSockets int
	tcp        bool
	dot        bool
	dotPort    int
	doh        bool
	dohPort    int
	dohPath    string
	certFile   string
	keyFile    string
}

type serveStats struct {
	udpQueries, udpTruncated, tcpQueries, tcpConns, dropped atomic.Int64
}

func parseServeFlags(args []string) (*serveConfig, error) {
	fs := flag.NewFlagSet("dnsload serve", flag.ContinueOnError)
	c := &serveConfig{}
	fs.StringVar(&c.addr, "a", "127.0.0.1:5300", "listen IP:PORT (loopback or 198.18.0.0/15 only)")
	fs.Float64Var(&c.duration, "l", 600, "stop after this many seconds")
	fs.Float64Var(&c.tcFraction, "tc", 0, "fraction of UDP answers sent truncated (TC=1), spread evenly")
	fs.IntVar(&c.tcpSize, "tcp-size", 0, "pad TCP answers with TXT records to about this many bytes")
	fs.IntVar(&c.udpSockets, "c", runtime.GOMAXPROCS(0), "UDP sockets (SO_REUSEPORT), one goroutine each")
	fs.BoolVar(&c.tcp, "tcp", true, "also serve TCP")
	fs.BoolVar(&c.dot, "dot", false, "also serve DNS over TLS (RFC 7858) on -dot-port")
	fs.IntVar(&c.dotPort, "dot-port", 853, "DNS over TLS port (same address)")
	fs.BoolVar(&c.doh, "doh", false, "also serve DNS over HTTPS (RFC 8484, HTTP/2 GET and POST) on -doh-port")
	fs.IntVar(&c.dohPort, "doh-port", 443, "DNS over HTTPS port (same address)")
	fs.StringVar(&c.dohPath, "doh-path", "/dns-query", "DNS over HTTPS path")
	fs.StringVar(&c.certFile, "cert", "", "PEM certificate for -dot/-doh (default: an ephemeral self-signed ECDSA P-256 one)")
	fs.StringVar(&c.keyFile, "key", "", "PEM private key of -cert")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case c.duration <= 0 || c.duration > maxDuration:
		return nil, fmt.Errorf("-l must be in (0, %d] seconds", maxDuration)
	case c.tcFraction < 0 || c.tcFraction > 1:
		return nil, errors.New("-tc must be in [0, 1]")
	case c.tcpSize < 0 || c.tcpSize > maxMessage:
		return nil, fmt.Errorf("-tcp-size must be in [0, %d]", maxMessage)
	case c.udpSockets < 1 || c.udpSockets > 64:
		return nil, errors.New("-c must be in [1, 64]")
	case c.dotPort < 1 || c.dotPort > 65535 || c.dohPort < 1 || c.dohPort > 65535:
		return nil, errors.New("-dot-port and -doh-port must be in [1, 65535]")
	case c.dot && c.doh && c.dotPort == c.dohPort:
		return nil, errors.New("-dot-port and -doh-port must differ")
	case c.dohPath == "" || c.dohPath[0] != '/':
		return nil, errors.New("-doh-path must start with /")
	case (c.certFile == "") != (c.keyFile == ""):
		return nil, errors.New("-cert and -key go together")
	}
	return c, nil
}

func reusePort(network, address string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

func serveMain(args []string) error {
	cfg, err := parseServeFlags(args)
	if err != nil {
		return err
	}
	ap, err := checkTarget(cfg.addr)
	if err != nil {
		return err
	}
	lc := net.ListenConfig{Control: reusePort}
	ctx := context.Background()
	var udps []*net.UDPConn
	for i := 0; i < cfg.udpSockets; i++ {
		pc, err := lc.ListenPacket(ctx, "udp", ap.String())
		if err != nil {
			return fmt.Errorf("cannot listen on udp %s: %v", ap, err)
		}
		u := pc.(*net.UDPConn)
		_ = u.SetReadBuffer(8 << 20)
		_ = u.SetWriteBuffer(8 << 20)
		udps = append(udps, u)
	}
	var tl net.Listener
	if cfg.tcp {
		tl, err = lc.Listen(ctx, "tcp", ap.String())
		if err != nil {
			return fmt.Errorf("cannot listen on tcp %s: %v", ap, err)
		}
	}
	var dotListener, dohListener net.Listener
	enc := &encryptedStats{}
	certSource := ""
	if cfg.dot || cfg.doh {
		cert, source, err := serverCertificate(cfg.certFile, cfg.keyFile, ap.Addr())
		if err != nil {
			return err
		}
		certSource = source
		if cfg.dot {
			at := netip.AddrPortFrom(ap.Addr(), uint16(cfg.dotPort)).String()
			plain, err := lc.Listen(ctx, "tcp", at)
			if err != nil {
				return fmt.Errorf("cannot listen on tcp %s (DoT): %v", at, err)
			}
			dotListener = tls.NewListener(plain, serverTLS(cert, enc))
		}
		if cfg.doh {
			at := netip.AddrPortFrom(ap.Addr(), uint16(cfg.dohPort)).String()
			plain, err := lc.Listen(ctx, "tcp", at)
			if err != nil {
				return fmt.Errorf("cannot listen on tcp %s (DoH): %v", at, err)
			}
			dohListener = tls.NewListener(plain, serverTLS(cert, enc, "h2"))
		}
	}
	emit := jsonLines(os.Stdout)
	emit(map[string]any{"type": "serve_ready", "addr": ap.String(), "tc_fraction": cfg.tcFraction,
		"tcp_size": cfg.tcpSize, "udp_sockets": cfg.udpSockets, "tcp": cfg.tcp,
		"dot": cfg.dot, "dot_port": cfg.dotPort, "doh": cfg.doh, "doh_port": cfg.dohPort,
		"doh_path": cfg.dohPath, "certificate": certSource})

	var st serveStats
	var wg sync.WaitGroup
	for _, u := range udps {
		wg.Add(1)
		go func() { defer wg.Done(); serveUDP(u, cfg, &st) }()
	}
	var conns sync.Map
	if tl != nil {
		wg.Add(1)
		go acceptLoop(tl, &st.tcpConns, &conns, &wg, func(c net.Conn) { serveTCPConn(c, cfg, &st) })
	}
	if dotListener != nil {
		wg.Add(1)
		go acceptLoop(dotListener, &enc.dotConns, &conns, &wg,
			func(c net.Conn) { serveTLS(c, false, cfg, &st, enc) })
	}
	if dohListener != nil {
		wg.Add(1)
		go acceptLoop(dohListener, &enc.dohConns, &conns, &wg,
			func(c net.Conn) { serveTLS(c, true, cfg, &st, enc) })
	}
	// until -l ends, or until stopped (SIGTERM, Ctrl-C): either way the totals are printed
	stopped, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	select {
	case <-time.After(time.Duration(cfg.duration * float64(time.Second))):
	case <-stopped.Done():
	}
	for _, u := range udps {
		u.Close()
	}
	if tl != nil {
		tl.Close()
	}
	if dotListener != nil {
		dotListener.Close()
	}
	if dohListener != nil {
		dohListener.Close()
	}
	conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	wg.Wait()
	emit(map[string]any{"type": "serve_total", "udp_queries": st.udpQueries.Load(),
		"udp_truncated": st.udpTruncated.Load(), "tcp_queries": st.tcpQueries.Load(),
		"tcp_conns": st.tcpConns.Load(), "dropped": st.dropped.Load(),
		"dot_queries": enc.dotQueries.Load(), "dot_conns": enc.dotConns.Load(),
		"doh_queries": enc.dohQueries.Load(), "doh_get": enc.dohGet.Load(),
		"doh_post": enc.dohPost.Load(), "doh_conns": enc.dohConns.Load(),
		"doh_bad": enc.dohBad.Load(), "tls_sessions": enc.sessions.snapshot()})
	return nil
}

// serveUDP answers one UDP socket's queries, read and answered in batches (recvmmsg and
// sendmmsg, as the generator's UDP mode sends them): one system call per batch, so that the
// responder answers faster than the generators it calibrates can send.
func serveUDP(u *net.UDPConn, cfg *serveConfig, st *serveStats) {
	bc, err := batching(u)
	if err != nil {
		return
	}
	in := make([]ipv4.Message, udpBatch)
	answers := make([]ipv4.Message, 0, udpBatch)
	outs := make([][]byte, udpBatch)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, 65536)}
	}
	// error-diffusion: exactly tcFraction of the answers are truncated, evenly spread
	acc := 0.0
	for {
		n, err := bc.ReadBatch(in, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		answers = answers[:0]
		for _, m := range in[:n] {
			st.udpQueries.Add(1)
			tc := false
			if cfg.tcFraction > 0 {
				acc += cfg.tcFraction
				if acc >= 1 {
					acc--
					tc = true
				}
			}
			k := len(answers)
			var ok bool
			outs[k], ok = buildAnswer(outs[k][:0], m.Buffers[0][:m.N], tc, 0)
			if !ok {
				st.dropped.Add(1)
				continue
			}
			if tc {
				st.udpTruncated.Add(1)
			}
			answers = append(answers, ipv4.Message{Buffers: [][]byte{outs[k]}, Addr: m.Addr})
		}
		for done := 0; done < len(answers); {
			sent, err := bc.WriteBatch(answers[done:], 0)
			if err != nil { // that answer is not sent (as a failed write was before)
				sent = 1
			}
			done += sent
		}
	}
}

func serveTCPConn(c net.Conn, cfg *serveConfig, st *serveStats) {
	serveStream(c, cfg, &st.tcpQueries, &st.dropped)
}

// maxMessage is the largest DNS message (RFC 1035 4.2.2: TCP's two-byte length prefix).
const maxMessage = 65535

// buildAnswer appends the canned answer to q onto out. tc: truncated, empty answer.
// padTo > 0: add TXT records (268 bytes each) in the additional section until the message is
// about padTo bytes (within one record of it), never past maxMessage with the OPT record.
func buildAnswer(out, q []byte, tc bool, padTo int) ([]byte, bool) {
	if len(q) < 12 || q[2]&0x80 != 0 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return out, false
	}
	base := len(out)
	p := 12
	for {
		if p >= len(q) {
			return out, false
		}
		l := int(q[p])
		if l == 0 {
			p++
			break
		}
		if l&0xc0 != 0 {
			return out, false
		}
		p += 1 + l
	}
	if p+4 > len(q) {
		return out, false
	}
	qtype := binary.BigEndian.Uint16(q[p : p+2])
	qend := p + 4
	edns := binary.BigEndian.Uint16(q[10:12]) > 0
	out = append(out, q[:qend]...)
	h := out[base:]
	h[2] = 0x80 | (q[2] & 0x79) | 0x04 // QR, keep opcode and RD, AA
	if tc {
		h[2] |= 0x02
	}
	h[3] = 0 // RA=0, NOERROR
	binary.BigEndian.PutUint16(h[6:8], 0)
	binary.BigEndian.PutUint16(h[8:10], 0)
	binary.BigEndian.PutUint16(h[10:12], 0)
	an, ar := 0, 0
	if !tc {
		switch qtype {
		case 1: // A 198.18.0.1
			out = append(out, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 198, 18, 0, 1)
			an++
		case 28: // AAAA 2001:db8::1
			out = append(out, 0xc0, 0x0c, 0, 28, 0, 1, 0, 0, 1, 0x2c, 0, 16,
				0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)
			an++
		}
		room := maxMessage
		if edns {
			room -= 11
		}
		for padTo > 0 && len(out)-base+268 <= min(padTo, room) {
			out = append(out, 0xc0, 0x0c, 0, 16, 0, 1, 0, 0, 1, 0x2c, 1, 0, 255)
			for i := 0; i < 255; i++ {
				out = append(out, 'x')
			}
			ar++
		}
	}
	if edns {
		out = append(out, 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0) // OPT, 4096
		ar++
	}
	h = out[base:]
	binary.BigEndian.PutUint16(h[6:8], uint16(an))
	binary.BigEndian.PutUint16(h[10:12], uint16(ar))
	return out, true
}
