package main

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// `dnsload stream`: queries over persistent connections, TCP, DNS over TLS or DNS over HTTPS
// (HTTP/2, GET or POST), `-c` connections sharing `-q` queries in flight (pipelined on TCP and
// TLS, one HTTP/2 stream each over HTTPS), closed loop (as fast as answers come back) or
// paced at `-Q` qps; or over `-c` UDP sockets the same way (stream_udp.go). Every answer's
// latency goes into the same histogram as `dnsload run`, and what each connection negotiated
// (TLS version, cipher, ALPN) is counted. It exists for DoH: dnsperf 2.10's DoH waits for
// each answer before its next query on a connection; and for UDP: dnsperf's own UDP ceiling
// on one core is below what the lab's fastest servers answer.

type streamConfig struct {
	server      string
	mode        string
	queryFile   string
	conns       int
	outstanding int
	duration    float64
	rate        float64
	timeout     time.Duration
	bufsize     int
	rd          bool
	dohMethod   string
	dohPath     string
	// HPACK-index each GET's :path (Go's encoder default). Off: the path never enters the
	// table (sent never-indexed, the one per-field form Go's hpack offers; nghttp2, under
	// dnsperf and curl, keeps :path out of the table too). Knot Resolver 5.7 decodes each
	// request in place over its own unread input, so a repeated path sent as a 1-byte index
	// lets the decoded queries overrun the frames not yet read
	dohIndexPath bool
	warmup       float64
	perQuery     bool
}

func parseStreamFlags(args []string) (*streamConfig, error) {
	fs := flag.NewFlagSet("dnsload stream", flag.ContinueOnError)
	c := &streamConfig{}
	fs.StringVar(&c.server, "s", "", "server IP:PORT (loopback or 198.18.0.0/15 only)")
	fs.StringVar(&c.mode, "m", "doh", "transport: udp, tcp, dot or doh")
	fs.StringVar(&c.queryFile, "d", "", "query file, one \"name TYPE\" per line")
	fs.IntVar(&c.conns, "c", 1, "connections (UDP: sockets), each kept open for the whole run")
	fs.IntVar(&c.outstanding, "q", 100, "queries in flight over all connections (spread evenly)")
	fs.Float64Var(&c.duration, "l", 10, "sending duration in seconds")
	fs.Float64Var(&c.rate, "Q", 0, "pace at this many queries per second (0: closed loop)")
	timeoutS := fs.Float64("t", 2.0, "timeout per query in seconds")
	fs.IntVar(&c.bufsize, "b", 0, "EDNS0 UDP buffer size in the queries (0 = no EDNS, as dnsperf)")
	fs.BoolVar(&c.rd, "rd", true, "set RD (recursion desired), as dnsperf does")
	fs.StringVar(&c.dohMethod, "doh-method", "GET", "DoH: GET or POST")
	fs.StringVar(&c.dohPath, "doh-path", "/dns-query", "DoH: the path")
	fs.BoolVar(&c.dohIndexPath, "doh-index-path", false, "DoH: HPACK-index GET's :path header (a repeated query then goes as a 1-byte index; off: a literal kept out of the table, as nghttp2 sends it)")
	fs.Float64Var(&c.warmup, "warmup", 0, "also print a 'steady' line over the run without its first SECONDS")
	fs.BoolVar(&c.perQuery, "per-query", false, "a new connection per query (tcp, dot): its latency runs from the dial, handshakes included; -q of them at a time")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.timeout = time.Duration(*timeoutS * float64(time.Second))
	switch {
	case c.server == "":
		return nil, errors.New("-s IP:PORT is required")
	case c.queryFile == "":
		return nil, errors.New("-d QUERYFILE is required")
	case c.mode != "udp" && c.mode != "tcp" && c.mode != "dot" && c.mode != "doh":
		return nil, fmt.Errorf("-m must be udp, tcp, dot or doh, not %q", c.mode)
	case c.conns < 1 || c.conns > 65535:
		return nil, errors.New("-c must be in [1, 65535]")
	case c.outstanding < c.conns || c.outstanding > 1_000_000:
		return nil, errors.New("-q must be at least -c (one query in flight per connection) and at most 1000000")
	case c.outstanding/c.conns > 65535:
		return nil, errors.New("-q / -c must be at most 65535 (message IDs per connection)")
	case c.duration <= 0 || c.duration > maxDuration:
		return nil, fmt.Errorf("-l must be in (0, %d] seconds", maxDuration)
	case c.rate < 0 || c.rate > maxRate:
		return nil, fmt.Errorf("-Q must be in [0, %d]", maxRate)
	case *timeoutS <= 0 || *timeoutS > 60:
		return nil, errors.New("-t must be in (0, 60] seconds")
	case c.bufsize < 0 || c.bufsize > 65535:
		return nil, errors.New("-b must be in [0, 65535]")
	case c.dohMethod != "GET" && c.dohMethod != "POST":
		return nil, errors.New("-doh-method must be GET or POST")
	case c.dohPath == "" || c.dohPath[0] != '/':
		return nil, errors.New("-doh-path must start with /")
	case c.perQuery && c.mode != "tcp" && c.mode != "dot":
		return nil, errors.New("-per-query: tcp or dot")
	case c.warmup < 0 || (c.warmup != 0 && c.warmup >= c.duration):
		return nil, errors.New("-warmup must be shorter than -l")
	}
	return c, nil
}

// streamCounters: what every connection adds to, read once a second by the reporter.
type streamCounters struct {
	sent, answered, timeouts, late, netErrors, reconnects, mismatched, truncated atomic.Int64
	rcodes                                                                       [16]atomic.Int64
	httpStatus                                                                   sync.Map // int -> *atomic.Int64
	connEnds                                                                     sync.Map // string -> *atomic.Int64
}

// connEnded counts why a connection ended before the run's end (`connEnds`): the first of
// its reader's and its writer's errors, or the server's GOAWAY (DoH), e.g. "read: eof".
func (c *streamCounters) connEnded(reason string) {
	n, _ := c.connEnds.LoadOrStore(reason, &atomic.Int64{})
	n.(*atomic.Int64).Add(1)
}

// endReason: `side` ("read", "write") and what ended it, in a few words a report can count.
func endReason(side string, err error) string {
	var alert tls.AlertError
	var nerr net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return side + ": eof"
	case errors.Is(err, syscall.ECONNRESET):
		return side + ": reset"
	case errors.Is(err, syscall.EPIPE):
		return side + ": broken pipe"
	case errors.Is(err, net.ErrClosed):
		return side + ": closed here"
	case errors.As(err, &alert):
		return fmt.Sprintf("%s: tls alert %d", side, uint8(alert))
	case errors.As(err, &nerr) && nerr.Timeout():
		return side + ": timeout"
	}
	text := err.Error()
	if len(text) > 60 {
		text = text[:60]
	}
	return side + ": " + text
}

type streamSnapshot struct {
	sent, answered, timeouts, late, netErrors, reconnects, mismatched, truncated int64
	rcodes                                                                       [16]int64
}

func (c *streamCounters) snap() streamSnapshot {
	s := streamSnapshot{sent: c.sent.Load(), answered: c.answered.Load(),
		timeouts: c.timeouts.Load(), late: c.late.Load(), netErrors: c.netErrors.Load(),
		reconnects: c.reconnects.Load(), mismatched: c.mismatched.Load(),
		truncated: c.truncated.Load()}
	for i := range c.rcodes {
		s.rcodes[i] = c.rcodes[i].Load()
	}
	return s
}

func (s streamSnapshot) minus(o streamSnapshot) streamSnapshot {
	d := streamSnapshot{sent: s.sent - o.sent, answered: s.answered - o.answered,
		timeouts: s.timeouts - o.timeouts, late: s.late - o.late,
		netErrors: s.netErrors - o.netErrors, reconnects: s.reconnects - o.reconnects,
		mismatched: s.mismatched - o.mismatched, truncated: s.truncated - o.truncated}
	for i := range s.rcodes {
		d.rcodes[i] = s.rcodes[i] - o.rcodes[i]
	}
	return d
}

type streamReport struct {
	Type        string           `json:"type"`
	T           float64          `json:"t"`
	Seconds     float64          `json:"seconds"`
	Transport   string           `json:"transport"`
	OfferedQPS  float64          `json:"offered_qps"`
	AnsweredQPS float64          `json:"answered_qps"`
	Sent        int64            `json:"sent"`
	Answered    int64            `json:"answered"`
	Timeouts    int64            `json:"timeouts"`
	Late        int64            `json:"late"`
	NetErrors   int64            `json:"net_errors"`
	Reconnects  int64            `json:"reconnects"`
	Mismatched  int64            `json:"mismatched"`
	Truncated   int64            `json:"truncated"` // UDP answers with TC=1 (counted as answered)
	Rcodes      map[string]int64 `json:"rcodes"`
	LatMs       latency          `json:"lat_ms"`
	LatHist     [][2]float64     `json:"lat_hist_ms,omitempty"`
	// total only: connections and what they negotiated, HTTP status codes (DoH)
	Connections int              `json:"connections,omitempty"`
	TLSSessions map[string]int64 `json:"tls_sessions,omitempty"`
	HTTPStatus  map[string]int64 `json:"http_status,omitempty"`
	// why connections ended before the run's end (`connEnded`), a count per reason
	ConnEnds map[string]int64 `json:"conn_ends,omitempty"`
}

func streamFigures(kind, mode string, t, seconds float64, d streamSnapshot, h *hist) streamReport {
	r := streamReport{Type: kind, T: round3(t), Seconds: round3(seconds), Transport: mode,
		Sent: d.sent, Answered: d.answered, Timeouts: d.timeouts, Late: d.late,
		NetErrors: d.netErrors, Reconnects: d.reconnects, Mismatched: d.mismatched,
		Truncated: d.truncated, Rcodes: map[string]int64{},
		LatMs: latency{P50: ms(h.quantile(0.50)), P90: ms(h.quantile(0.90)),
			P99: ms(h.quantile(0.99)), Max: ms(h.max)}}
	if seconds > 0 {
		r.OfferedQPS = round3(float64(d.sent) / seconds)
		r.AnsweredQPS = round3(float64(d.answered) / seconds)
	}
	for i, n := range d.rcodes {
		if n != 0 {
			name, ok := dns.RcodeToString[i]
			if !ok {
				name = fmt.Sprintf("RCODE%d", i)
			}
			r.Rcodes[name] = n
		}
	}
	if kind != "interval" {
		r.LatHist = h.buckets()
	}
	return r
}

type streamGen struct {
	cfg      *streamConfig
	queries  [][]byte
	start    time.Time
	deadline time.Time
	paced    atomic.Int64 // sends claimed so far, for -Q
	next     atomic.Int64 // the next query of the file
	c        streamCounters
	lat      atomicHist
	sessions tlsSessions
	tlsConf  *tls.Config
}

func streamMain(args []string) error {
	cfg, err := parseStreamFlags(args)
	if err != nil {
		return err
	}
	if _, err := checkTarget(cfg.server); err != nil {
		return err
	}
	queries, err := loadQueries(cfg.queryFile, cfg.bufsize)
	if err != nil {
		return err
	}
	for _, q := range queries {
		if cfg.rd {
			q[2] |= 0x01
		}
	}
	g := &streamGen{cfg: cfg, queries: queries}
	// the lab's certificates are its own, self-signed: nothing to verify against
	g.tlsConf = &tls.Config{InsecureSkipVerify: true}
	if cfg.mode == "doh" {
		g.tlsConf.NextProtos = []string{"h2"}
	}
	emit := jsonLines(os.Stdout)
	emit(map[string]any{"type": "start", "server": cfg.server, "transport": cfg.mode,
		"connections": cfg.conns, "outstanding": cfg.outstanding, "rate": cfg.rate,
		"duration": cfg.duration, "timeout": cfg.timeout.Seconds(), "queries": len(queries),
		"doh_method": cfg.dohMethod, "doh_path": cfg.dohPath, "doh_index_path": cfg.dohIndexPath, "rd": cfg.rd,
		"per_query": cfg.perQuery})
	return g.run(emit)
}

// pace waits for the next send slot at -Q; false once the run's sending time is over.
func (g *streamGen) pace() bool {
	if g.cfg.rate > 0 {
		n := g.paced.Add(1) - 1
		at := g.start.Add(time.Duration(float64(n) / g.cfg.rate * float64(time.Second)))
		if at.After(g.deadline) {
			return false
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
	}
	return time.Now().Before(g.deadline)
}

// queryIndex: the next query of the file (in turn, cycling), as its index.
func (g *streamGen) queryIndex() int {
	return int(g.next.Add(1)-1) % len(g.queries)
}

func (g *streamGen) query() []byte {
	return g.queries[g.queryIndex()]
}

// answered counts an answer that came within the timeout; false (a late answer) otherwise.
func (g *streamGen) answered(b []byte, sent time.Time) bool {
	elapsed := time.Since(sent)
	if elapsed > g.cfg.timeout {
		g.c.late.Add(1)
		return false
	}
	g.c.answered.Add(1)
	g.c.rcodes[msgRcode(b)].Add(1)
	g.lat.record(elapsed.Microseconds())
	return true
}

func (g *streamGen) run(emit func(any)) error {
	cfg := g.cfg
	// connections kept open are set up before the pacing clock starts: the queries that fell
	// due while they dialled would otherwise leave in one burst on the first one up, and a
	// burst is what starts a Nagle server's hold, each answer then waiting for the ACK the
	// next query brings (F6 NOTES.md, "Where the ~40 ms stalls come from")
	var opened []net.Conn
	if !cfg.perQuery {
		opened = g.dialAll(cfg.conns)
	}
	g.start = time.Now()
	g.deadline = g.start.Add(time.Duration(cfg.duration * float64(time.Second)))
	per := cfg.outstanding / cfg.conns
	extra := cfg.outstanding % cfg.conns
	var wg sync.WaitGroup
	for i := 0; cfg.perQuery && i < cfg.outstanding; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); g.oneShots() }()
	}
	for i := 0; !cfg.perQuery && i < cfg.conns; i++ {
		inflight := per
		if i < extra {
			inflight++
		}
		wg.Add(1)
		go func(opened net.Conn) {
			defer wg.Done()
			session := g.framedSession
			switch cfg.mode {
			case "doh":
				session = g.dohSession
			case "udp":
				session = g.udpSession
			}
			g.connection(opened, func(c net.Conn) bool { return session(c, inflight) })
		}(opened[i])
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var total, steady hist
	var steadyStart *streamSnapshot
	prev := g.c.snap()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := g.start
	for running := true; running; {
		select {
		case <-tick.C:
		case <-done:
			running = false
		}
		now := time.Now()
		cur := g.c.snap()
		h := g.lat.drain()
		total.add(h)
		if steadyStart != nil {
			steady.add(h)
		}
		emit(streamFigures("interval", cfg.mode, now.Sub(g.start).Seconds(),
			now.Sub(last).Seconds(), cur.minus(prev), h))
		if cfg.warmup > 0 && steadyStart == nil && now.Sub(g.start).Seconds() >= cfg.warmup {
			s := cur
			steadyStart = &s
		}
		prev, last = cur, now
	}
	all := g.c.snap()
	t := time.Since(g.start).Seconds()
	report := streamFigures("total", cfg.mode, t, cfg.duration, all, &total)
	report.Connections = cfg.conns
	report.TLSSessions = g.sessions.snapshot()
	report.ConnEnds = map[string]int64{}
	g.c.connEnds.Range(func(k, v any) bool {
		report.ConnEnds[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	report.HTTPStatus = map[string]int64{}
	g.c.httpStatus.Range(func(k, v any) bool {
		report.HTTPStatus[fmt.Sprint(k)] = v.(*atomic.Int64).Load()
		return true
	})
	emit(report)
	if steadyStart != nil {
		emit(streamFigures("steady", cfg.mode, t, cfg.duration-cfg.warmup,
			all.minus(*steadyStart), &steady))
	}
	return nil
}

// oneShots: one query per connection, one connection at a time, until the run's end: each
// answer's latency runs from the dial, the TCP (and TLS) handshake included.
func (g *streamGen) oneShots() {
	buf := make([]byte, 65535)
	for g.pace() {
		start := time.Now()
		g.c.sent.Add(1)
		c, err := g.dial()
		if err != nil {
			g.c.netErrors.Add(1)
			continue
		}
		_ = c.SetDeadline(start.Add(g.cfg.timeout))
		q := g.query()
		msg := append([]byte{byte(len(q) >> 8), byte(len(q))}, q...)
		_, err = c.Write(msg)
		n := 0
		if err == nil {
			var lb [2]byte
			if _, err = io.ReadFull(c, lb[:]); err == nil {
				n = int(binary.BigEndian.Uint16(lb[:]))
				_, err = io.ReadFull(c, buf[:n])
			}
		}
		c.Close()
		switch {
		case isTimeout(err):
			g.c.timeouts.Add(1)
		case err != nil || n < 12:
			g.c.netErrors.Add(1)
		default:
			g.answered(buf[:n], start)
		}
	}
}

// dial opens one connection of the run's transport (TLS: with its handshake done; UDP: a
// socket connected to the server from a port of its own).
func (g *streamGen) dial() (net.Conn, error) {
	d := net.Dialer{Timeout: g.cfg.timeout}
	if g.cfg.mode == "udp" {
		c, err := d.Dial("udp", g.cfg.server)
		if u, ok := c.(*net.UDPConn); ok {
			_ = u.SetReadBuffer(8 << 20)
			_ = u.SetWriteBuffer(8 << 20)
		}
		return c, err
	}
	c, err := d.Dial("tcp", g.cfg.server)
	if err != nil || g.cfg.mode == "tcp" {
		return c, err
	}
	tc := tls.Client(c, g.tlsConf)
	_ = tc.SetDeadline(time.Now().Add(g.cfg.timeout))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	_ = tc.SetDeadline(time.Time{})
	g.sessions.add(tc.ConnectionState())
	return tc, nil
}

// dialAll opens n connections at once (nil where a dial failed, counted: `connection`
// dials it again).
func (g *streamGen) dialAll(n int) []net.Conn {
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := g.dial()
			if err != nil {
				g.c.netErrors.Add(1)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	return conns
}

// connection keeps one connection of the run open: `c` (dialled here when nil), handed to
// `session`, dialled again (a reconnect) when the session says it broke before the run's end.
func (g *streamGen) connection(c net.Conn, session func(net.Conn) bool) {
	for first := true; time.Now().Before(g.deadline); first = false {
		if !first {
			g.c.reconnects.Add(1)
		}
		if c == nil {
			var err error
			if c, err = g.dial(); err != nil {
				g.c.netErrors.Add(1)
				time.Sleep(10 * time.Millisecond)
				continue
			}
		}
		if !session(c) {
			return
		}
		c = nil
	}
	if c != nil { // opened, but the run was over before it was used
		c.Close()
	}
}

// slots: the queries in flight on one connection, each slot a message ID (TCP, DoT) or an
// HTTP/2 stream (DoH): when it was sent (0: free), the free ones, and the connection's end.
type slots struct {
	sentAt []atomic.Int64
	free   chan int
	broken chan struct{}
	once   sync.Once
	ended  sync.Once      // why the connection ended: counted once, by the first to see it
	wg     sync.WaitGroup // the connection's reader and its sweeper
}

func newSlots(n int) *slots {
	return &slots{sentAt: make([]atomic.Int64, n), free: make(chan int, n),
		broken: make(chan struct{})}
}

func (s *slots) fail() { s.once.Do(func() { close(s.broken) }) }

// end: the connection ends for `reason` (counted in `c` unless "", the run's own end), then
// fails; a later reason (the other side's error it caused) is not counted.
func (s *slots) end(c *streamCounters, reason string) {
	s.ended.Do(func() {
		if reason != "" {
			c.connEnded(reason)
		}
	})
	s.fail()
}

// answered: the answer to a slot's query came; it counts unless the slot timed out meanwhile.
func (g *streamGen) slotAnswered(s *slots, slot int, b []byte, ok bool) {
	at := s.sentAt[slot].Swap(0)
	if at == 0 {
		g.c.late.Add(1)
		return
	}
	if ok {
		g.answered(b, time.Unix(0, at))
	} else {
		g.c.mismatched.Add(1)
	}
	s.free <- slot
}

// sweep: a query unanswered for -t is lost and its slot reused (`forget` told first).
func (g *streamGen) sweep(s *slots, forget func(int)) {
	defer s.wg.Done()
	tick := time.NewTicker(g.cfg.timeout / 10)
	defer tick.Stop()
	for {
		select {
		case <-s.broken:
			return
		case now := <-tick.C:
			limit := now.Add(-g.cfg.timeout).UnixNano()
			for i := range s.sentAt {
				if at := s.sentAt[i].Load(); at != 0 && at < limit &&
					s.sentAt[i].CompareAndSwap(at, 0) {
					g.c.timeouts.Add(1)
					if forget != nil {
						forget(i)
					}
					s.free <- i
				}
			}
		}
	}
}

// pump sends a query on every free slot (`send`), paced at -Q, flushing what is buffered
// (`flush`) whenever no slot is free; at the run's end it waits for the answers still due.
// True when the connection broke before the run's end.
func (g *streamGen) pump(s *slots, c net.Conn, send func(slot int) error,
	flush func() error) bool {
	for {
		var slot int
		select {
		case slot = <-s.free:
		case <-s.broken:
			g.lostWith(s)
			return true
		default: // nothing free now: send what is buffered, then wait
			if err := flush(); err != nil {
				g.c.netErrors.Add(1)
				s.end(&g.c, endReason("write", err))
				continue
			}
			select {
			case slot = <-s.free:
			case <-s.broken:
				g.lostWith(s)
				return true
			}
		}
		if !g.pace() {
			_ = flush()
			g.drain(s)
			s.ended.Do(func() {}) // the run's end: what breaks now is not counted
			c.Close()
			g.lostWith(s) // what is still in flight after the drain is lost
			return false
		}
		s.sentAt[slot].Store(time.Now().UnixNano())
		g.c.sent.Add(1)
		err := send(slot)
		if err == nil && g.cfg.rate > 0 { // paced: every query goes out on time
			err = flush()
		}
		if err != nil {
			g.c.netErrors.Add(1)
			s.end(&g.c, endReason("write", err))
		}
	}
}

// framedSession: TCP or DoT, `inflight` queries pipelined on one connection, matched to
// their answers by message ID; true when it broke before the run's end.
func (g *streamGen) framedSession(c net.Conn, inflight int) bool {
	defer c.Close()
	s := newSlots(inflight)
	for i := 0; i < inflight; i++ {
		s.free <- i
	}
	s.wg.Add(2)
	go func() { // reader
		defer s.wg.Done()
		defer s.fail()
		r := bufio.NewReaderSize(c, 65536)
		var lb [2]byte
		buf := make([]byte, 65535)
		for {
			if _, err := io.ReadFull(r, lb[:]); err != nil {
				s.end(&g.c, endReason("read", err))
				return
			}
			n := int(binary.BigEndian.Uint16(lb[:]))
			if _, err := io.ReadFull(r, buf[:n]); err != nil {
				s.end(&g.c, endReason("read", err))
				return
			} else if n < 12 {
				s.end(&g.c, "read: short message")
				return
			}
			if id := int(msgID(buf)); id < inflight {
				g.slotAnswered(s, id, buf[:n], true)
			} else {
				g.c.mismatched.Add(1)
			}
		}
	}()
	go g.sweep(s, nil)
	w := bufio.NewWriterSize(c, 65536)
	msg := make([]byte, 0, 512)
	return g.pump(s, c, func(slot int) error {
		q := g.query()
		msg = append(append(msg[:0], byte(len(q)>>8), byte(len(q))), q...)
		setMsgID(msg[2:], uint16(slot))
		_, err := w.Write(msg)
		return err
	}, func() error {
		if w.Buffered() == 0 {
			return nil
		}
		return w.Flush()
	})
}

// lostWith: the connection broke; once its goroutines are done, the queries it still had in
// flight count as lost (timeouts), as dnsperf counts them.
func (g *streamGen) lostWith(s *slots) {
	s.wg.Wait()
	for i := range s.sentAt {
		if s.sentAt[i].Swap(0) != 0 {
			g.c.timeouts.Add(1)
		}
	}
}

// drain waits, at the end of the run, for the queries still in flight (up to the timeout).
func (g *streamGen) drain(s *slots) {
	until := time.Now().Add(g.cfg.timeout + 100*time.Millisecond)
	for time.Now().Before(until) {
		busy := false
		for i := range s.sentAt {
			if s.sentAt[i].Load() != 0 {
				busy = true
				break
			}
		}
		if !busy {
			return
		}
		select {
		case <-s.broken:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}
