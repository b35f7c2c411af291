package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Hard bounds: the generator must stop by itself and never run away.
const (
	maxRate     = 2_000_000
	maxDuration = 7 * 24 * 3600 // seconds
)

type genConfig struct {
	server         string
	queryFile      string
	rate           float64
	duration       float64
	maxQueries     int64
	maxOutstanding int64
	timeout        time.Duration
	bufsize        int
	tcpReuse       bool
	tcpIdle        int
	sockets        int
	warmup         float64
}

func parseRunFlags(args []string) (*genConfig, error) {
	fs := flag.NewFlagSet("dnsload run", flag.ContinueOnError)
	c := &genConfig{}
	fs.StringVar(&c.server, "s", "", "server IP:PORT (loopback or 198.18.0.0/15 only)")
	fs.StringVar(&c.queryFile, "d", "", "query file, one \"name TYPE\" per line")
	fs.Float64Var(&c.rate, "Q", 1000, "target rate in queries per second (open loop, paced)")
	fs.Float64Var(&c.duration, "l", 10, "sending duration in seconds")
	fs.Int64Var(&c.maxQueries, "n", 0, "stop after this many queries (0 = rate x duration)")
	fs.Int64Var(&c.maxOutstanding, "q", 20000, "max outstanding queries (UDP + TCP retries); beyond it a due query is counted as throttled, not sent")
	timeoutS := fs.Float64("t", 1.0, "timeout in seconds for the whole request->response time, TCP retry included")
	fs.IntVar(&c.bufsize, "b", 4096, "EDNS0 UDP buffer size (0 = no EDNS)")
	fs.BoolVar(&c.tcpReuse, "tcp-reuse", false, "reuse TCP connections for retries (default: a new connection per retry, as an MME does)")
	fs.IntVar(&c.tcpIdle, "tcp-idle", 64, "with -tcp-reuse: idle connections kept in the pool")
	fs.IntVar(&c.sockets, "c", 2*runtime.GOMAXPROCS(0), "UDP sockets (one sender and one receiver goroutine each)")
	fs.Float64Var(&c.warmup, "warmup", 0, "also print a 'steady' line over the run without its first SECONDS")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.timeout = time.Duration(*timeoutS * float64(time.Second))
	switch {
	case c.server == "":
		return nil, errors.New("-s IP:PORT is required")
	case c.queryFile == "":
		return nil, errors.New("-d QUERYFILE is required")
	case c.rate <= 0 || c.rate > maxRate:
		return nil, fmt.Errorf("-Q must be in (0, %d]", maxRate)
	case c.duration <= 0 || c.duration > maxDuration:
		return nil, fmt.Errorf("-l must be in (0, %d] seconds", maxDuration)
	case c.maxOutstanding < 1:
		return nil, errors.New("-q must be >= 1")
	case *timeoutS <= 0 || *timeoutS > 60:
		return nil, errors.New("-t must be in (0, 60] seconds")
	case c.bufsize < 0 || c.bufsize > 65535:
		return nil, errors.New("-b must be in [0, 65535]")
	case c.sockets < 1 || c.sockets > 256:
		return nil, errors.New("-c must be in [1, 256]")
	case c.warmup < 0 || c.warmup >= c.duration:
		if c.warmup != 0 {
			return nil, errors.New("-warmup must be shorter than -l")
		}
	}
	return c, nil
}

// counters are cumulative; the reporter prints deltas.
type counters struct {
	sent, throttled, answered, udpAnswered       atomic.Int64
	tcpRetries, tcpAnswered, truncated, timeouts atomic.Int64
	netErrors, recvErrors, late, mismatched      atomic.Int64
	rcodes                                       [16]atomic.Int64
}

type snapshot struct {
	sent, throttled, answered, udpAnswered       int64
	tcpRetries, tcpAnswered, truncated, timeouts int64
	netErrors, recvErrors, late, mismatched      int64
	rcodes                                       [16]int64
}

func (c *counters) snap() snapshot {
	s := snapshot{
		sent: c.sent.Load(), throttled: c.throttled.Load(), answered: c.answered.Load(),
		udpAnswered: c.udpAnswered.Load(), tcpRetries: c.tcpRetries.Load(),
		tcpAnswered: c.tcpAnswered.Load(), truncated: c.truncated.Load(),
		timeouts: c.timeouts.Load(), netErrors: c.netErrors.Load(),
		recvErrors: c.recvErrors.Load(), late: c.late.Load(), mismatched: c.mismatched.Load(),
	}
	for i := range c.rcodes {
		s.rcodes[i] = c.rcodes[i].Load()
	}
	return s
}

func (s snapshot) minus(o snapshot) snapshot {
	d := snapshot{
		sent: s.sent - o.sent, throttled: s.throttled - o.throttled,
		answered: s.answered - o.answered, udpAnswered: s.udpAnswered - o.udpAnswered,
		tcpRetries: s.tcpRetries - o.tcpRetries, tcpAnswered: s.tcpAnswered - o.tcpAnswered,
		truncated: s.truncated - o.truncated, timeouts: s.timeouts - o.timeouts,
		netErrors: s.netErrors - o.netErrors, recvErrors: s.recvErrors - o.recvErrors,
		late: s.late - o.late, mismatched: s.mismatched - o.mismatched,
	}
	for i := range s.rcodes {
		d.rcodes[i] = s.rcodes[i] - o.rcodes[i]
	}
	return d
}

type slot struct {
	sent   int64 // ns since start
	qidx   int32
	gen    uint32
	active bool
}

type pending struct {
	id  uint16
	gen uint32
}

// udpSock is one connected UDP socket with its own 16-bit ID space.
type udpSock struct {
	conn  *net.UDPConn
	mu    sync.Mutex
	slots [65536]slot
	free  [65536]uint16 // FIFO ring of free IDs: the oldest freed is reused last
	fHead int
	fLen  int
	fifo  []pending // send order == deadline order, for the timeout sweeper
	fPos  int
}

type generator struct {
	cfg         *genConfig
	queries     [][]byte
	qlen        []int // header + question length of each query, to match answers
	start       time.Time
	timeoutNs   int64
	endNs       int64
	next        atomic.Int64 // next query index (sequential through the file)
	outstanding atomic.Int64
	c           counters
	hist        atomicHist
	socks       []*udpSock
	tcpPool     chan net.Conn
	tcpWG       sync.WaitGroup
	stopSend    atomic.Bool
}

func (g *generator) now() int64 { return int64(time.Since(g.start)) }

func questionEnd(b []byte) int {
	p := 12
	for p < len(b) {
		l := int(b[p])
		if l == 0 {
			return p + 1 + 4
		}
		p += 1 + l
	}
	return len(b)
}

func runMain(args []string) error {
	cfg, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	g, err := newGenerator(cfg)
	if err != nil {
		return err
	}
	emit := jsonLines(os.Stdout)
	emit(map[string]any{
		"type": "start", "tool": "dnsload", "server": cfg.server, "queries": len(g.queries),
		"rate": cfg.rate, "duration_s": cfg.duration, "max_outstanding": cfg.maxOutstanding,
		"timeout_s": cfg.timeout.Seconds(), "bufsize": cfg.bufsize, "tcp_reuse": cfg.tcpReuse,
		"sockets": cfg.sockets, "warmup_s": cfg.warmup,
	})
	g.run(emit)
	return nil
}

// newGenerator checks the target, loads the queries and opens the UDP sockets.
func newGenerator(cfg *genConfig) (*generator, error) {
	target, err := checkTarget(cfg.server)
	if err != nil {
		return nil, err
	}
	qs, err := loadQueries(cfg.queryFile, cfg.bufsize)
	if err != nil {
		return nil, err
	}
	g := &generator{cfg: cfg, queries: qs, timeoutNs: int64(cfg.timeout)}
	for _, q := range qs {
		g.qlen = append(g.qlen, questionEnd(q))
	}
	if cfg.tcpReuse {
		g.tcpPool = make(chan net.Conn, cfg.tcpIdle)
	}
	raddr := net.UDPAddrFromAddrPort(target)
	for i := 0; i < cfg.sockets; i++ {
		conn, err := net.DialUDP("udp", nil, raddr)
		if err != nil {
			return nil, fmt.Errorf("cannot open UDP socket to %s: %v", target, err)
		}
		_ = conn.SetReadBuffer(8 << 20)
		_ = conn.SetWriteBuffer(8 << 20)
		s := &udpSock{conn: conn, fLen: 65536}
		for id := range s.free {
			s.free[id] = uint16(id)
		}
		g.socks = append(g.socks, s)
	}
	return g, nil
}

func (g *generator) run(emit func(any)) {
	cfg := g.cfg
	g.start = time.Now()
	g.endNs = int64(cfg.duration * float64(time.Second))
	limit := cfg.maxQueries
	if planned := int64(cfg.rate*cfg.duration + 0.5); limit <= 0 || limit > planned {
		limit = planned
	}
	var recvWG, sendWG sync.WaitGroup
	stopSweep := make(chan struct{})
	perSock := limit / int64(len(g.socks))
	extra := limit % int64(len(g.socks))
	for i, s := range g.socks {
		n := perSock
		if int64(i) < extra {
			n++
		}
		recvWG.Add(2)
		go func() { defer recvWG.Done(); g.receive(s) }()
		go func() { defer recvWG.Done(); g.sweep(s, stopSweep) }()
		sendWG.Add(1)
		go func(i int) {
			defer sendWG.Done()
			g.send(s, i, n)
		}(i)
	}

	// Reporter: one line per second while sending, then the drain, then the totals.
	var (
		prev      = g.c.snap()
		total     hist
		steady    hist
		steadyBeg *snapshot
		tick      = 1
	)
	sendDone := make(chan struct{})
	go func() { sendWG.Wait(); close(sendDone) }()
	drainDeadline := int64(-1)
	report := func(t float64, dt float64) {
		cur := g.c.snap()
		h := g.hist.drain()
		total.add(h)
		if cfg.warmup > 0 && t > cfg.warmup {
			if steadyBeg == nil {
				p := prev
				steadyBeg = &p
			}
			steady.add(h)
		}
		emit(figures("interval", t, dt, cur.minus(prev), h, g.outstanding.Load()))
		prev = cur
	}
	lastT := 0.0
	for {
		target := g.start.Add(time.Duration(tick) * time.Second)
		wait := time.Until(target)
		sent := false
		select {
		case <-sendDone:
			sent = true
		case <-time.After(wait):
		}
		if sent {
			// Sending is over: wait for outstanding answers up to the timeout, then report.
			if drainDeadline < 0 {
				drainDeadline = g.now() + g.timeoutNs + int64(100*time.Millisecond)
			}
			for g.outstanding.Load() > 0 && g.now() < drainDeadline {
				time.Sleep(5 * time.Millisecond)
			}
			break
		}
		t := float64(tick)
		report(t, t-lastT)
		lastT = t
		tick++
	}
	close(stopSweep)
	g.stopSend.Store(true)
	g.tcpWG.Wait()
	for _, s := range g.socks {
		s.conn.Close()
	}
	recvWG.Wait()
	if g.tcpPool != nil {
		close(g.tcpPool)
		for c := range g.tcpPool {
			c.Close()
		}
	}
	end := g.now()
	t := float64(end) / 1e9
	report(t, t-lastT)
	all := g.c.snap()
	emit(figures("total", t, cfg.duration, all, &total, g.outstanding.Load()))
	if cfg.warmup > 0 && steadyBeg != nil {
		emit(figures("steady", t, cfg.duration-cfg.warmup, all.minus(*steadyBeg), &steady, 0))
	}
}

// send paces one socket's share of the rate: open loop, a due query is sent (or, when the
// outstanding limit is reached, counted as throttled) whatever the answers do.
func (g *generator) send(s *udpSock, idx int, n int64) {
	rate := g.cfg.rate / float64(len(g.socks)) // per socket
	nsPer := 1e9 / rate
	// stagger the sockets so their sends interleave
	offset := nsPer * float64(idx) / float64(len(g.socks))
	buf := make([]byte, 0, 4096)
	var done int64
	for done < n && !g.stopSend.Load() {
		now := float64(g.now())
		last := now >= float64(g.endNs)
		if last {
			// send what fell due before the end, then stop
			now = float64(g.endNs)
		}
		due := int64((now-offset)/nsPer) + 1
		if due > n {
			due = n
		}
		for done < due {
			g.sendOne(s, &buf)
			done++
		}
		if last {
			return
		}
		nextAt := offset + float64(done)*nsPer
		sleep := time.Duration(nextAt - float64(g.now()))
		// Go timers are coarse; sleeping at least 200 µs batches sends at high rates
		// without changing the average rate.
		if sleep < 200*time.Microsecond {
			sleep = 200 * time.Microsecond
		}
		time.Sleep(sleep)
	}
}

func (g *generator) sendOne(s *udpSock, buf *[]byte) {
	if g.outstanding.Add(1) > g.cfg.maxOutstanding {
		g.outstanding.Add(-1)
		g.c.throttled.Add(1)
		return
	}
	qi := (g.next.Add(1) - 1) % int64(len(g.queries))
	now := g.now()
	s.mu.Lock()
	if s.fLen == 0 {
		s.mu.Unlock()
		g.outstanding.Add(-1)
		g.c.throttled.Add(1)
		return
	}
	id := s.free[s.fHead]
	s.fHead = (s.fHead + 1) & 0xffff
	s.fLen--
	sl := &s.slots[id]
	sl.gen++
	sl.active = true
	sl.sent = now
	sl.qidx = int32(qi)
	gen := sl.gen
	s.fifo = append(s.fifo, pending{id: id, gen: gen})
	s.mu.Unlock()

	b := append((*buf)[:0], g.queries[qi]...)
	setMsgID(b, id)
	*buf = b
	g.c.sent.Add(1)
	if _, err := s.conn.Write(b); err != nil {
		s.mu.Lock()
		if sl.active && sl.gen == gen {
			sl.active = false
			s.release(id)
			s.mu.Unlock()
			g.outstanding.Add(-1)
			g.c.netErrors.Add(1)
			return
		}
		s.mu.Unlock()
	}
}

// release puts an ID back at the tail of the free ring; caller holds s.mu.
func (s *udpSock) release(id uint16) {
	s.free[(s.fHead+s.fLen)&0xffff] = id
	s.fLen++
}

func (g *generator) receive(s *udpSock) {
	buf := make([]byte, 65536)
	for {
		n, err := s.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// e.g. ICMP port unreachable on a connected socket: not tied to one query
			g.c.recvErrors.Add(1)
			continue
		}
		if n < 12 || !msgQR(buf[:n]) {
			g.c.mismatched.Add(1)
			continue
		}
		now := g.now()
		id := msgID(buf)
		s.mu.Lock()
		sl := &s.slots[id]
		if !sl.active {
			s.mu.Unlock()
			g.c.late.Add(1)
			continue
		}
		qi := sl.qidx
		ql := g.qlen[qi]
		if n < ql || !bytes.Equal(buf[12:ql], g.queries[qi][12:ql]) {
			s.mu.Unlock()
			g.c.mismatched.Add(1)
			continue
		}
		sent := sl.sent
		sl.active = false
		s.release(id)
		s.mu.Unlock()
		if msgTC(buf[:n]) {
			g.c.truncated.Add(1)
			g.tcpWG.Add(1)
			go g.tcpRetry(qi, sent)
			continue
		}
		g.outstanding.Add(-1)
		g.c.answered.Add(1)
		g.c.udpAnswered.Add(1)
		g.c.rcodes[msgRcode(buf)].Add(1)
		g.hist.record((now - sent) / 1000)
	}
}

// sweep expires queries whose whole timeout has passed without an answer.
func (g *generator) sweep(s *udpSock, stop <-chan struct{}) {
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		now := g.now()
		expired := int64(0)
		s.mu.Lock()
		for s.fPos < len(s.fifo) {
			p := s.fifo[s.fPos]
			sl := &s.slots[p.id]
			if sl.active && sl.gen == p.gen {
				if now-sl.sent < g.timeoutNs {
					break
				}
				sl.active = false
				s.release(p.id)
				expired++
			}
			s.fPos++
		}
		// compact the queue once its consumed head dominates
		if s.fPos > 4096 && s.fPos*2 > len(s.fifo) {
			s.fifo = append(s.fifo[:0], s.fifo[s.fPos:]...)
			s.fPos = 0
		}
		s.mu.Unlock()
		if expired > 0 {
			g.outstanding.Add(-expired)
			g.c.timeouts.Add(expired)
		}
	}
}

// tcpRetry re-sends query qi over TCP after a truncated UDP answer; the deadline is the
// original UDP send time plus the timeout, so the TAT covers both legs.
func (g *generator) tcpRetry(qi int32, sent int64) {
	defer g.tcpWG.Done()
	defer g.outstanding.Add(-1)
	g.c.tcpRetries.Add(1)
	deadline := g.start.Add(time.Duration(sent + g.timeoutNs))
	q := g.queries[qi]
	msg := make([]byte, 2+len(q))
	binary.BigEndian.PutUint16(msg, uint16(len(q)))
	copy(msg[2:], q)
	setMsgID(msg[2:], uint16(sent)^uint16(qi))

	var rcode int
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var conn net.Conn
		reused := false
		if g.tcpPool != nil && attempt == 0 {
			select {
			case conn = <-g.tcpPool:
				reused = true
			default:
			}
		}
		if conn == nil {
			d := net.Dialer{Deadline: deadline}
			conn, err = d.Dial("tcp", g.cfg.server)
			if err != nil {
				break
			}
		}
		rcode, err = tcpExchange(conn, msg, deadline)
		if err == nil && g.tcpPool != nil && !g.stopSend.Load() {
			select {
			case g.tcpPool <- conn:
			default:
				conn.Close()
			}
		} else {
			conn.Close()
		}
		// a pooled connection the server has closed meanwhile: one fresh try
		if err != nil && reused && !isTimeout(err) {
			continue
		}
		break
	}
	if err != nil {
		if isTimeout(err) {
			g.c.timeouts.Add(1)
		} else {
			g.c.netErrors.Add(1)
		}
		return
	}
	now := g.now()
	if now-sent > g.timeoutNs {
		g.c.timeouts.Add(1)
		return
	}
	g.c.answered.Add(1)
	g.c.tcpAnswered.Add(1)
	g.c.rcodes[rcode].Add(1)
	g.hist.record((now - sent) / 1000)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// tcpExchange sends one length-prefixed query and returns the answer's rcode.
func tcpExchange(conn net.Conn, msg []byte, deadline time.Time) (int, error) {
	if err := conn.SetDeadline(deadline); err != nil {
		return 0, err
	}
	if _, err := conn.Write(msg); err != nil {
		return 0, err
	}
	var lb [2]byte
	if _, err := io.ReadFull(conn, lb[:]); err != nil {
		return 0, err
	}
	bp := ansPool.Get().(*[]byte)
	defer ansPool.Put(bp)
	ans := (*bp)[:binary.BigEndian.Uint16(lb[:])]
	if _, err := io.ReadFull(conn, ans); err != nil {
		return 0, err
	}
	if len(ans) < 12 || msgID(ans) != msgID(msg[2:]) {
		return 0, errors.New("bad TCP answer")
	}
	return msgRcode(ans), nil
}

// TCP answers can be 64 KB; only their header is kept, so the buffers are recycled.
var ansPool = sync.Pool{New: func() any { b := make([]byte, 65536); return &b }}

type latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

type report struct {
	Type        string           `json:"type"`
	T           float64          `json:"t"`
	Seconds     float64          `json:"seconds"`
	OfferedQPS  float64          `json:"offered_qps"`
	AnsweredQPS float64          `json:"answered_qps"`
	Sent        int64            `json:"sent"`
	Answered    int64            `json:"answered"`
	UDP         int64            `json:"udp"`
	UDPAnswered int64            `json:"udp_answered"`
	TCP         int64            `json:"tcp"`
	TCPAnswered int64            `json:"tcp_answered"`
	Truncated   int64            `json:"truncated"`
	Timeouts    int64            `json:"timeouts"`
	Throttled   int64            `json:"throttled"`
	NetErrors   int64            `json:"net_errors"`
	RecvErrors  int64            `json:"recv_errors"`
	Late        int64            `json:"late"`
	Mismatched  int64            `json:"mismatched"`
	Rcodes      map[string]int64 `json:"rcodes"`
	Outstanding int64            `json:"outstanding"`
	LatMs       latency          `json:"lat_ms"`
	// total and steady only: the latency histogram's non-empty buckets, [upper edge ms, count]
	LatHist [][2]float64 `json:"lat_hist_ms,omitempty"`
}

func figures(kind string, t, seconds float64, d snapshot, h *hist, outstanding int64) report {
	r := report{
		Type: kind, T: round3(t), Seconds: round3(seconds),
		Sent: d.sent, Answered: d.answered, UDP: d.sent, UDPAnswered: d.udpAnswered,
		TCP: d.tcpRetries, TCPAnswered: d.tcpAnswered, Truncated: d.truncated,
		Timeouts: d.timeouts, Throttled: d.throttled, NetErrors: d.netErrors,
		RecvErrors: d.recvErrors, Late: d.late, Mismatched: d.mismatched,
		Rcodes: map[string]int64{}, Outstanding: outstanding,
		LatMs: latency{
			P50: ms(h.quantile(0.50)), P90: ms(h.quantile(0.90)),
			P99: ms(h.quantile(0.99)), Max: ms(h.max),
		},
	}
	if kind != "interval" {
		r.LatHist = h.buckets()
	}
	if seconds > 0 {
		r.OfferedQPS = round3(float64(d.sent+d.throttled) / seconds)
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
	return r
}

func ms(us int64) float64      { return round3(float64(us) / 1000) }
func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
