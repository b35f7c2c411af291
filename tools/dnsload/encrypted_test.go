package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
)

// startEncrypted runs the responder's TCP, DoT and DoH listeners on loopback ports of their
// own; returns their addresses, the counters and a stop function.
func startEncrypted(t *testing.T) (map[string]string, *serveStats, *encryptedStats, func()) {
	t.Helper()
	cfg := &serveConfig{dohPath: "/dns-query"}
	st, enc := &serveStats{}, &encryptedStats{}
	cert, source, err := serverCertificate("", "", netip.MustParseAddr("127.0.0.1"))
	if err != nil || source == "" {
		t.Fatalf("ephemeral certificate: %v", err)
	}
	var conns sync.Map
	var wg sync.WaitGroup
	addrs := map[string]string{}
	var listeners []net.Listener
	for _, mode := range []string{"tcp", "dot", "doh"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[mode] = l.Addr().String()
		switch mode {
		case "tcp":
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					go serveTCPConn(c, cfg, st)
				}
			}()
		case "dot":
			l = tls.NewListener(l, serverTLS(cert, enc))
			wg.Add(1)
			go acceptLoop(l, &enc.dotConns, &conns, &wg,
				func(c net.Conn) { serveTLS(c, false, cfg, st, enc) })
		case "doh":
			l = tls.NewListener(l, serverTLS(cert, enc, "h2"))
			wg.Add(1)
			go acceptLoop(l, &enc.dohConns, &conns, &wg,
				func(c net.Conn) { serveTLS(c, true, cfg, st, enc) })
		}
		listeners = append(listeners, l)
	}
	return addrs, st, enc, func() {
		for _, l := range listeners {
			l.Close()
		}
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	}
}

// streamTotal runs the generator and returns its `total` line (nil without one).
func streamTotal(t *testing.T, g *streamGen) *streamReport {
	t.Helper()
	var total *streamReport
	if err := g.run(func(v any) {
		if r, ok := v.(streamReport); ok && r.Type == "total" {
			total = &r
		}
	}); err != nil {
		t.Fatal(err)
	}
	return total
}

// Every transport, closed loop and paced: every query answered, nothing lost, over the
// connections asked for, and the responder counts what the generator negotiated.
func TestStreamAgainstTheEncryptedResponder(t *testing.T) {
	addrs, st, enc, stop := startEncrypted(t)
	defer stop()
	qf := filepath.Join(t.TempDir(), "q.txt")
	os.WriteFile(qf, []byte("a.example A\nb.example AAAA\nc.example TXT\n"), 0o644)
	cases := []struct {
		mode, method string
		rate         float64
	}{{"tcp", "", 0}, {"dot", "", 0}, {"doh", "GET", 0}, {"doh", "POST", 0}, {"dot", "", 3000},
		{"doh", "GET", 3000}}
	for _, c := range cases {
		cfg := &streamConfig{server: addrs[c.mode], mode: c.mode, queryFile: qf, conns: 3,
			outstanding: 60, duration: 0.5, rate: c.rate, timeout: 2e9, rd: true,
			dohMethod: c.method, dohPath: "/dns-query"}
		if c.method == "" {
			cfg.dohMethod = "GET"
		}
		queries, err := loadQueries(qf, 0)
		if err != nil {
			t.Fatal(err)
		}
		g := &streamGen{cfg: cfg, queries: queries,
			tlsConf: &tls.Config{InsecureSkipVerify: true}}
		if c.mode == "doh" {
			g.tlsConf.NextProtos = []string{"h2"}
		}
		total := streamTotal(t, g)
		if total == nil || total.Sent == 0 || total.Answered != total.Sent || total.Timeouts != 0 ||
			total.NetErrors != 0 || total.Mismatched != 0 || total.Reconnects != 0 {
			t.Fatalf("%s %s at %g qps: %+v", c.mode, c.method, c.rate, total)
		}
		if total.Rcodes["NOERROR"] != total.Answered {
			t.Errorf("%s: rcodes %v", c.mode, total.Rcodes)
		}
		if c.rate > 0 && (total.Sent < 1200 || total.Sent > 1600) {
			t.Errorf("%s paced at %g qps for 0.5 s sent %d", c.mode, c.rate, total.Sent)
		}
		if c.mode != "tcp" && len(total.TLSSessions) == 0 {
			t.Errorf("%s: no TLS session recorded", c.mode)
		}
		if c.mode == "doh" && total.HTTPStatus["200"] != total.Answered {
			t.Errorf("doh: HTTP status %v for %d answers", total.HTTPStatus, total.Answered)
		}
	}
	if enc.dotConns.Load() != 6 || enc.dohConns.Load() != 9 {
		t.Errorf("connections: %d DoT, %d DoH; want 6 and 9 (3 per run)", enc.dotConns.Load(),
			enc.dohConns.Load())
	}
	if enc.dohGet.Load() == 0 || enc.dohPost.Load() == 0 || enc.dohBad.Load() != 0 ||
		st.dropped.Load() != 0 {
		t.Errorf("DoH: %d GET, %d POST, %d bad, %d dropped", enc.dohGet.Load(),
			enc.dohPost.Load(), enc.dohBad.Load(), st.dropped.Load())
	}
	for session := range enc.sessions.snapshot() {
		if session != "TLS 1.3 TLS_AES_128_GCM_SHA256" &&
			session != "TLS 1.3 TLS_AES_128_GCM_SHA256 h2" {
			t.Errorf("negotiated %q", session)
		}
	}
}

// A server that never answers: every query is lost at its timeout and the run still ends.
func TestStreamTimesOutOnASilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	qf := filepath.Join(t.TempDir(), "q.txt")
	os.WriteFile(qf, []byte("a.example A\n"), 0o644)
	queries, _ := loadQueries(qf, 0)
	g := &streamGen{cfg: &streamConfig{server: l.Addr().String(), mode: "tcp", queryFile: qf,
		conns: 2, outstanding: 10, duration: 0.3, timeout: 2e8}, queries: queries}
	total := streamTotal(t, g)
	if total == nil || total.Answered != 0 || total.Sent == 0 || total.Timeouts != total.Sent {
		t.Errorf("%+v", total)
	}
}

func TestStreamFlagsRefuseBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-d", "q"}, {"-s", "127.0.0.1:53"}, {"-s", "127.0.0.1:53", "-d", "q", "-m", "quic"},
		{"-s", "127.0.0.1:53", "-d", "q", "-c", "10", "-q", "5"},
		{"-s", "127.0.0.1:53", "-d", "q", "-doh-method", "PUT"},
	} {
		if _, err := parseStreamFlags(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	for _, args := range [][]string{{"-dot", "-doh", "-dot-port", "853", "-doh-port", "853"},
		{"-cert", "c.pem"}, {"-doh-path", "dns-query"}} {
		if _, err := parseServeFlags(args); err == nil {
			t.Errorf("serve %v accepted", args)
		}
	}
}

// A new connection per query: every query answered, each over a connection of its own.
func TestStreamPerQuery(t *testing.T) {
	addrs, st, enc, stop := startEncrypted(t)
	defer stop()
	qf := filepath.Join(t.TempDir(), "q.txt")
	os.WriteFile(qf, []byte("a.example A\n"), 0o644)
	queries, err := loadQueries(qf, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"tcp", "dot"} {
		g := &streamGen{cfg: &streamConfig{server: addrs[mode], mode: mode, queryFile: qf,
			conns: 1, outstanding: 4, duration: 0.5, rate: 200, timeout: 2e9, perQuery: true},
			queries: queries, tlsConf: &tls.Config{InsecureSkipVerify: true}}
		total := streamTotal(t, g)
		if total == nil || total.Sent < 80 || total.Answered != total.Sent || total.NetErrors != 0 {
			t.Fatalf("%s: %+v", mode, total)
		}
	}
	if enc.dotConns.Load() < 80 || st.tcpQueries.Load() < 80 {
		t.Errorf("%d DoT connections, %d TCP queries", enc.dotConns.Load(), st.tcpQueries.Load())
	}
}

// Paced over connections kept open, the pace starts once they are up: the queries due while
// a slow handshake went on do not leave in one burst on the first connection up (a burst is
// what starts a Nagle server's hold of each answer, F6 NOTES.md).
func TestStreamPacesFromTheConnectionsBeingUp(t *testing.T) {
	cert, _, err := serverCertificate("", "", netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var arrivals []time.Time
	go func() {
		for {
			raw, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer raw.Close()
				time.Sleep(200 * time.Millisecond) // a slow handshake
				c := tls.Server(raw, serverTLS(cert, &encryptedStats{}))
				q := make([]byte, 65535)
				for {
					var lb [2]byte
					if _, err := io.ReadFull(c, lb[:]); err != nil {
						return
					}
					n := int(lb[0])<<8 | int(lb[1])
					if _, err := io.ReadFull(c, q[:n]); err != nil {
						return
					}
					mu.Lock()
					arrivals = append(arrivals, time.Now())
					mu.Unlock()
					out, _ := buildAnswer([]byte{0, 0}, q[:n], false, 0)
					out[0], out[1] = byte((len(out)-2)>>8), byte(len(out)-2)
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	qf := filepath.Join(t.TempDir(), "q.txt")
	os.WriteFile(qf, []byte("a.example A\n"), 0o644)
	queries, _ := loadQueries(qf, 0)
	g := &streamGen{cfg: &streamConfig{server: l.Addr().String(), mode: "dot", queryFile: qf,
		conns: 2, outstanding: 10, duration: 0.4, rate: 100, timeout: 2e9, rd: true},
		queries: queries, tlsConf: &tls.Config{InsecureSkipVerify: true}}
	total := streamTotal(t, g)
	if total == nil || total.Sent < 30 || total.Answered != total.Sent {
		t.Fatalf("%+v", total)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
	// at 100 qps one query every 10 ms: never 4 within 10 ms (the 200 ms of handshake would
	// have put 20 in one burst)
	for i := 3; i < len(arrivals); i++ {
		if gap := arrivals[i].Sub(arrivals[i-3]); gap < 10*time.Millisecond {
			t.Fatalf("queries %d-%d arrived within %v: a burst", i-3, i, gap)
		}
	}
}

// A repeated GET's :path goes as a literal kept out of the HPACK table by default (nghttp2
// keeps it out too), so every request block carries its query; -doh-index-path sends a
// repeat as a 1-byte index, the request shorter than the query it decodes to (what Knot
// Resolver 5.7's in-place decoding trips on). The flag's default is off.
func TestRequestHeadersPathIndexing(t *testing.T) {
	if cfg, err := parseStreamFlags([]string{"-s", "127.0.0.1:443", "-d", "q"}); err != nil || cfg.dohIndexPath {
		t.Fatalf("-doh-index-path must default to off: %+v %v", cfg, err)
	}
	q := make([]byte, 40)
	q[5] = 1
	for _, index := range []bool{false, true} {
		cfg := &streamConfig{dohMethod: "GET", dohPath: "/dns-query", dohIndexPath: index}
		var hbuf bytes.Buffer
		enc := hpack.NewEncoder(&hbuf)
		dec := hpack.NewDecoder(4096, nil)
		sizes := []int{}
		var last []hpack.HeaderField
		for i := 0; i < 3; i++ {
			if err := requestHeaders(enc, &hbuf, cfg, "198.18.0.1:443", q); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, hbuf.Len())
			fields, err := dec.DecodeFull(hbuf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			last = fields
		}
		if !index {
			if sizes[2] < len(q) {
				t.Errorf("not indexed: the third block is %d B, shorter than its %d B query", sizes[2], len(q))
			}
			var path *hpack.HeaderField
			for i := range last {
				if last[i].Name == ":path" {
					path = &last[i]
				}
			}
			if path == nil || !path.Sensitive || len(path.Value) < 50 {
				t.Errorf("not indexed: the third block's :path %+v", path)
			}
		} else if sizes[2] >= len(q) {
			t.Errorf("indexed: the third block is %d B, not shorter than its %d B query", sizes[2], len(q))
		}
	}
}
