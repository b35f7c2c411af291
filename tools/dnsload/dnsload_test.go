package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestCheckTarget(t *testing.T) {
	ok := []string{"127.0.0.1:53", "127.9.9.9:5300", "[::1]:53", "198.18.0.11:53", "198.19.255.254:53"}
	for _, a := range ok {
		if _, err := checkTarget(a); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	bad := []string{"8.8.8.8:53", "10.0.0.1:53", "192.168.1.1:53", "198.20.0.1:53", "198.17.255.255:53",
		"localhost:53", "127.0.0.1", "127.0.0.1:0", "[2001:db8::1]:53"}
	for _, a := range bad {
		_, err := checkTarget(a)
		if err == nil {
			t.Errorf("%s accepted", a)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error for %s is not one line: %q", a, err)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h atomicHist
	// 1..10000 µs uniformly: p50 ~ 5000, p99 ~ 9900, within the 1.6 % bucket error
	for v := int64(1); v <= 10000; v++ {
		h.record(v)
	}
	d := h.drain()
	if d.n != 10000 || d.max != 10000 {
		t.Fatalf("n=%d max=%d", d.n, d.max)
	}
	for _, c := range []struct {
		q    float64
		want float64
	}{{0.5, 5000}, {0.9, 9000}, {0.99, 9900}} {
		got := float64(d.quantile(c.q))
		if got < c.want || got > c.want*1.02 {
			t.Errorf("q%.2f = %.0f, want %.0f (+2%%)", c.q, got, c.want)
		}
	}
	buckets := d.buckets()
	var counted float64
	last := -1.0
	for _, b := range buckets {
		if b[0] <= last || b[1] <= 0 {
			t.Fatalf("buckets not ascending and non-empty: %v", b)
		}
		last = b[0]
		counted += b[1]
	}
	if counted != 10000 || last < 10 || last > 10.2 {
		t.Errorf("buckets hold %.0f answers up to %.3f ms, want 10000 up to ~10 ms", counted, last)
	}
	if e := h.drain(); e.n != 0 || e.max != 0 {
		t.Errorf("drain did not reset: n=%d max=%d", e.n, e.max)
	}
	for _, v := range []int64{0, 1, 127, 128, 129, 1000, 123456, 3_600_000_000} {
		i := bucketOf(v)
		if bucketUpper(i) < v || (i > 0 && bucketUpper(i-1) >= v) {
			t.Errorf("value %d not inside bucket %d (upper %d)", v, i, bucketUpper(i))
		}
	}
}

func TestParseQueries(t *testing.T) {
	in := "# comment\n\ntac-lb10.tac-hb10.tac.epc.mnc010.mcc440.3gppnetwork.org NAPTR\nexample.org\nx.example AAAA\n"
	qs, err := parseQueries(strings.NewReader(in), "q", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 3 {
		t.Fatalf("got %d queries", len(qs))
	}
	m := new(dns.Msg)
	if err := m.Unpack(qs[0]); err != nil {
		t.Fatal(err)
	}
	if m.Question[0].Qtype != dns.TypeNAPTR || m.IsEdns0() == nil || m.IsEdns0().UDPSize() != 4096 {
		t.Errorf("bad query: %v", m)
	}
	if _, err := parseQueries(strings.NewReader("a.example BOGUS\n"), "q", 0); err == nil {
		t.Error("unknown type accepted")
	}
	if _, err := parseQueries(strings.NewReader("# only\n"), "q", 0); err == nil {
		t.Error("empty file accepted")
	}
}

func TestBuildAnswer(t *testing.T) {
	q, _ := packQuery("a.example", dns.TypeA, 4096)
	setMsgID(q, 4242)
	out, ok := buildAnswer(nil, q, false, 0)
	if !ok {
		t.Fatal("not answered")
	}
	m := new(dns.Msg)
	if err := m.Unpack(out); err != nil {
		t.Fatal(err)
	}
	if m.Id != 4242 || !m.Response || m.Truncated || len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "198.18.0.1" {
		t.Errorf("bad answer: %v", m)
	}
	out, _ = buildAnswer(nil, q, true, 0)
	if err := m.Unpack(out); err != nil || !m.Truncated || len(m.Answer) != 0 {
		t.Errorf("bad truncated answer: %v %v", m, err)
	}
	out, _ = buildAnswer(nil, q, false, 23000)
	if err := m.Unpack(out); err != nil || len(out) < 22000 || len(out) > 23000 {
		t.Errorf("padded answer: %d bytes, err %v", len(out), err)
	}
	// the largest message DNS allows, with and without the OPT record
	for _, edns := range []int{4096, 0} {
		q, _ := packQuery("a.example", dns.TypeA, edns)
		out, _ = buildAnswer(nil, q, false, maxMessage)
		if err := m.Unpack(out); err != nil || len(out) > maxMessage || len(out) < maxMessage-268 {
			t.Errorf("edns %d: largest padded answer: %d bytes, err %v", edns, len(out), err)
		}
	}
	if _, ok := buildAnswer(nil, out, false, 0); ok {
		t.Error("answered a response")
	}
}

// End to end on loopback: the in-process responder truncates half the answers; every query
// must be answered, every truncated one retried over TCP, with nothing lost.
func TestGeneratorEndToEnd(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		port := u.LocalAddr().(*net.UDPAddr).Port
		tl, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			t.Skipf("TCP port %d taken: %v", port, err)
		}
		scfg := &serveConfig{tcFraction: 0.5, tcpSize: 3000}
		var st serveStats
		go serveUDP(u, scfg, &st)
		go func() {
			for {
				c, err := tl.Accept()
				if err != nil {
					return
				}
				st.tcpConns.Add(1)
				go serveTCPConn(c, scfg, &st)
			}
		}()
		qf := filepath.Join(t.TempDir(), "q.txt")
		os.WriteFile(qf, []byte("a.example A\nb.example AAAA\nc.example NAPTR\n"), 0o644)
		cfg := &genConfig{server: u.LocalAddr().String(), queryFile: qf, rate: 2000, duration: 1,
			maxOutstanding: 1000, timeout: time.Second, bufsize: 4096, tcpReuse: reuse, tcpIdle: 8,
			sockets: 2, warmup: 0}
		g, err := newGenerator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var total *report
		g.run(func(v any) {
			if r, ok := v.(report); ok && r.Type == "total" {
				total = &r
			}
		})
		u.Close()
		tl.Close()
		if total == nil {
			t.Fatal("no total line")
		}
		if total.Sent != 2000 || total.Answered != 2000 || total.Timeouts != 0 || total.NetErrors != 0 {
			t.Errorf("reuse=%v: %+v", reuse, *total)
		}
		if total.Truncated != 1000 || total.TCP != 1000 || total.TCPAnswered != 1000 || total.Rcodes["NOERROR"] != 2000 {
			t.Errorf("reuse=%v: fallback counts wrong: %+v", reuse, *total)
		}
		if reuse && st.tcpConns.Load() >= 1000 {
			t.Errorf("reuse: %d TCP connections for 1000 retries", st.tcpConns.Load())
		}
		if !reuse && st.tcpConns.Load() != 1000 {
			t.Errorf("no reuse: %d TCP connections for 1000 retries", st.tcpConns.Load())
		}
	}
}

// A silent server: every query must end as a timeout, and the run must still stop by itself.
func TestGeneratorTimeouts(t *testing.T) {
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	qf := filepath.Join(t.TempDir(), "q.txt")
	os.WriteFile(qf, []byte("a.example A\n"), 0o644)
	cfg := &genConfig{server: u.LocalAddr().String(), queryFile: qf, rate: 500, duration: 0.5,
		maxOutstanding: 100, timeout: 200 * time.Millisecond, bufsize: 0, sockets: 1}
	g, err := newGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var total *report
	start := time.Now()
	g.run(func(v any) {
		if r, ok := v.(report); ok && r.Type == "total" {
			total = &r
		}
	})
	if time.Since(start) > 2*time.Second {
		t.Errorf("run took %v", time.Since(start))
	}
	if total == nil || total.Answered != 0 || total.Sent+total.Throttled != 250 || total.Timeouts != total.Sent {
		t.Errorf("%+v", total)
	}
	if total.Throttled == 0 {
		t.Error("max outstanding 100 at 500 qps with a 200 ms timeout should throttle")
	}
}
