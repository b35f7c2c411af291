package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// udpResponder: a UDP responder for the tests that counts what it receives, from which
// source ports, and how many queries it held unanswered at most; `fate` says per query (by
// arrival, from 1) whether to answer now, later, or never, `tc` whether to truncate.
type udpResponder struct {
	conn       *net.UDPConn
	fate       func(n int64) (answer bool, delay time.Duration)
	tc         func(n int64) bool
	received   atomic.Int64
	dropped    atomic.Int64
	delayed    atomic.Int64
	pending    atomic.Int64
	maxPending atomic.Int64
	mu         sync.Mutex
	ports      map[int]bool
}

func startUDPResponder(t *testing.T, network, addr string) *udpResponder {
	t.Helper()
	u, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(addr)})
	if err != nil {
		t.Skipf("no UDP listener on %s: %v", addr, err)
	}
	r := &udpResponder{conn: u, ports: map[int]bool{},
		fate: func(int64) (bool, time.Duration) { return true, 0 },
		tc:   func(int64) bool { return false }}
	t.Cleanup(func() { u.Close() })
	return r
}

func (r *udpResponder) serve() {
	buf := make([]byte, 65536)
	for {
		n, from, err := r.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		k := r.received.Add(1)
		r.mu.Lock()
		r.ports[from.Port] = true
		r.mu.Unlock()
		answer, delay := r.fate(k)
		if !answer {
			r.dropped.Add(1)
			continue
		}
		out, ok := buildAnswer(nil, buf[:n], r.tc(k), 0)
		if !ok {
			continue
		}
		if delay == 0 {
			_, _ = r.conn.WriteToUDP(out, from)
			continue
		}
		r.delayed.Add(1)
		if p := r.pending.Add(1); p > r.maxPending.Load() {
			r.maxPending.Store(p) // only this goroutine raises it
		}
		time.AfterFunc(delay, func() {
			r.pending.Add(-1) // before the answer leaves: the next query may follow it at once
			_, _ = r.conn.WriteToUDP(out, from)
		})
	}
}

func (r *udpResponder) sourcePorts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ports)
}

func runUDPStream(t *testing.T, r *udpResponder, names string, cfg streamConfig) streamReport {
	t.Helper()
	qf := filepath.Join(t.TempDir(), "q.txt")
	os.WriteFile(qf, []byte(names), 0o644)
	queries, err := loadQueries(qf, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.server, cfg.mode, cfg.queryFile, cfg.rd = r.conn.LocalAddr().String(), "udp", qf, true
	total := streamTotal(t, &streamGen{cfg: &cfg, queries: queries})
	if total == nil {
		t.Fatal("no total line")
	}
	return *total
}

// Closed loop and paced, over IPv4 and IPv6 loopback: every query answered, from as many
// source ports as sockets asked; a truncated answer counts as answered (no TCP retry: the
// responder has no TCP listener), and is counted as truncated.
func TestStreamUDPAnswersEveryQuery(t *testing.T) {
	for _, c := range []struct {
		network, addr string
		rate          float64
	}{{"udp4", "127.0.0.1", 0}, {"udp4", "127.0.0.1", 2000}, {"udp6", "::1", 0}} {
		r := startUDPResponder(t, c.network, c.addr)
		r.tc = func(n int64) bool { return n%2 == 0 }
		go r.serve()
		total := runUDPStream(t, r, "a.example A\nb.example AAAA\nc.example TXT\n",
			streamConfig{conns: 3, outstanding: 60, duration: 0.5, rate: c.rate, timeout: 2e9})
		if total.Sent == 0 || total.Answered != total.Sent || total.Sent != r.received.Load() ||
			total.Timeouts != 0 || total.Late != 0 || total.Mismatched != 0 || total.NetErrors != 0 {
			t.Fatalf("%s at %g qps: %+v, responder got %d", c.addr, c.rate, total, r.received.Load())
		}
		if total.Rcodes["NOERROR"] != total.Answered || total.Transport != "udp" {
			t.Errorf("%s: %+v", c.addr, total)
		}
		if half := total.Answered / 2; total.Truncated < half-1 || total.Truncated > half+1 {
			t.Errorf("%s: %d truncated of %d answers, the responder truncated every second",
				c.addr, total.Truncated, total.Answered)
		}
		if r.sourcePorts() != 3 {
			t.Errorf("%s: queries came from %d source ports, want one per socket (3)", c.addr,
				r.sourcePorts())
		}
		// paced at 2000 qps for 0.5 s: 1000 send slots, the last one at the deadline
		if c.rate > 0 && (total.Sent < 950 || total.Sent > 1000) {
			t.Errorf("paced at %g qps for 0.5 s: sent %d", c.rate, total.Sent)
		}
		if c.rate == 0 && total.Sent < 2000 {
			t.Errorf("closed loop on loopback sent only %d in 0.5 s", total.Sent)
		}
	}
}

// Answers held 20 ms: the responder never holds more than -q queries (closed loop keeps
// exactly -q in flight, spread over the sockets, 7 + 6 + 6 here), and does hold that many.
func TestStreamUDPKeepsQueriesInFlight(t *testing.T) {
	r := startUDPResponder(t, "udp4", "127.0.0.1")
	r.fate = func(int64) (bool, time.Duration) { return true, 20 * time.Millisecond }
	go r.serve()
	total := runUDPStream(t, r, "a.example A\n",
		streamConfig{conns: 3, outstanding: 19, duration: 0.5, timeout: 2e9})
	if max := r.maxPending.Load(); max != 19 {
		t.Errorf("the responder held at most %d queries, want -q = 19", max)
	}
	if total.Answered != total.Sent || total.Timeouts != 0 {
		t.Errorf("%+v", total)
	}
	// 19 in flight, each answered after >= 20 ms, for 0.5 s: at most 19 x 25 rounds
	if total.Sent < 19*10 || total.Sent > 19*26 {
		t.Errorf("sent %d, want about 19 x 0.5 s / 20 ms", total.Sent)
	}
	if total.LatMs.P50 < 20 {
		t.Errorf("median latency %.3f ms with every answer held 20 ms", total.LatMs.P50)
	}
}

// Queries the responder drops are lost, and an answer that comes after its query's timeout is
// late: neither is taken for the answer of the query sent next on its slot (one name only, so
// only the message ID tells them apart), and every query sent is answered or lost.
func TestStreamUDPCountsLostAndLate(t *testing.T) {
	r := startUDPResponder(t, "udp4", "127.0.0.1")
	r.fate = func(n int64) (bool, time.Duration) {
		switch n % 5 {
		case 1:
			return false, 0 // dropped
		case 2:
			return true, 400 * time.Millisecond // after the 200 ms timeout
		}
		return true, 0
	}
	go r.serve()
	total := runUDPStream(t, r, "a.example A\n",
		streamConfig{conns: 2, outstanding: 8, duration: 1, timeout: 200 * time.Millisecond})
	lost := r.dropped.Load() + r.delayed.Load()
	if total.Sent != r.received.Load() || total.Timeouts != lost ||
		total.Answered != total.Sent-lost || total.Mismatched != 0 {
		t.Errorf("sent %d (responder got %d), answered %d, lost %d; want %d lost (%d dropped, "+
			"%d answered late): %+v", total.Sent, r.received.Load(), total.Answered,
			total.Timeouts, lost, r.dropped.Load(), r.delayed.Load(), total)
	}
	if total.Late == 0 || total.Late > r.delayed.Load() {
		t.Errorf("%d late answers, the responder answered %d after the timeout", total.Late,
			r.delayed.Load())
	}
	if total.LatMs.Max >= 200 {
		t.Errorf("an answer slower than the timeout counted: max %.3f ms", total.LatMs.Max)
	}
}

// A server that never answers: every query is lost at its timeout, the sockets keep exactly
// -q in flight (sent once at the start, once more after the timeout), and the run ends.
func TestStreamUDPSilentServer(t *testing.T) {
	r := startUDPResponder(t, "udp4", "127.0.0.1")
	r.fate = func(int64) (bool, time.Duration) { return false, 0 }
	go r.serve()
	start := time.Now()
	total := runUDPStream(t, r, "a.example A\n",
		streamConfig{conns: 2, outstanding: 10, duration: 0.3, timeout: 200 * time.Millisecond})
	if total.Answered != 0 || total.Sent != 20 || total.Timeouts != 20 {
		t.Errorf("sent %d, lost %d, answered %d; want 20 sent (10 in flight, one timeout "+
			"within the run) and all lost", total.Sent, total.Timeouts, total.Answered)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("run took %v", time.Since(start))
	}
}

func TestStreamUDPRefusesOtherTargets(t *testing.T) {
	qf := filepath.Join(t.TempDir(), "q.txt")
	os.WriteFile(qf, []byte("a.example A\n"), 0o644)
	err := streamMain([]string{"-s", "192.0.2.1:53", "-m", "udp", "-d", qf, "-l", "1"})
	if err == nil || !strings.Contains(err.Error(), "refusing target") {
		t.Errorf("a target outside the lab: %v", err)
	}
	if _, err := parseStreamFlags([]string{"-s", "127.0.0.1:53", "-d", qf, "-m", "udp",
		"-per-query"}); err == nil {
		t.Error("-m udp -per-query accepted")
	}
}
