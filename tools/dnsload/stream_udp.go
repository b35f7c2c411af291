package main

import (
	"bytes"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// `dnsload stream -m udp`: `-c` UDP sockets, each connected from a source port of its own (as
// dnsperf's clients), sharing `-q` queries in flight (spread evenly over them, as over the
// connections of the other modes), closed loop or paced at `-Q`. Queries leave and answers
// arrive in batches (sendmmsg and recvmmsg through golang.org/x/net): one system call per
// batch, not per query, is what lets one core send more than dnsperf does. An answer matches
// its query on its socket by message ID and question; a query unanswered within -t is lost
// (a timeout). A truncated answer (TC=1) counts as answered and is not retried over TCP, as
// dnsperf counts it; `truncated` says how many there were.

// udpBatch: the most datagrams one system call sends or receives.
const udpBatch = 64

// noQuery: a slot's message ID while no query of it is in flight (never a 16-bit ID).
const noQuery = 1 << 31

// batchConn: sendmmsg and recvmmsg on a connected UDP socket (ipv4 and ipv6 alike; their
// Message is the same type).
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// udpFlight: what the queries in flight on one socket were, beside their `slots`: the message
// ID each slot's query carries (slot + inflight x its reuse count, so that a late answer to
// a slot's previous query does not match the next one) and its query's index in the file.
type udpFlight struct {
	ids   []atomic.Uint32
	query []atomic.Int32
	uses  []int // the pump's own: how often each slot was used
	span  int   // IDs below it are in use: a multiple of the slots, at most 65536
}

func newUDPFlight(inflight int) *udpFlight {
	f := &udpFlight{ids: make([]atomic.Uint32, inflight), query: make([]atomic.Int32, inflight),
		uses: make([]int, inflight), span: inflight * (65536 / inflight)}
	for i := range f.ids {
		f.ids[i].Store(noQuery)
	}
	return f
}

// next: the message ID of the slot's next query.
func (f *udpFlight) next(slot int) uint16 {
	n := len(f.ids)
	id := slot + n*f.uses[slot]
	f.uses[slot] = (f.uses[slot] + 1) % (f.span / n)
	return uint16(id)
}

// udpSession: one UDP socket of the run, `inflight` queries in flight on it; false at the
// run's end (a UDP socket does not break: its send errors are counted and its queries freed).
func (g *streamGen) udpSession(c net.Conn, inflight int) bool {
	defer c.Close()
	bc, err := batching(c)
	if err != nil {
		g.c.netErrors.Add(1)
		return false
	}
	s := newSlots(inflight)
	for i := 0; i < inflight; i++ {
		s.free <- i
	}
	f := newUDPFlight(inflight)
	s.wg.Add(2)
	go g.udpReader(s, f, bc)
	go g.sweep(s, func(slot int) { f.ids[slot].Store(noQuery) })
	out := make([]ipv4.Message, 0, udpBatch)
	slotOf := make([]int, 0, udpBatch)
	bufs := make([][]byte, udpBatch)
	flush := func() error {
		for done := 0; done < len(out); {
			n, err := bc.WriteBatch(out[done:], 0)
			if err != nil { // e.g. ECONNREFUSED after a port unreachable: one query not sent
				g.c.netErrors.Add(1)
				g.unsent(s, f, slotOf[done])
				n = 1
			}
			done += n
		}
		out, slotOf = out[:0], slotOf[:0]
		return nil
	}
	return g.pump(s, c, func(slot int) error {
		qi := g.queryIndex()
		k := len(out)
		bufs[k] = append(bufs[k][:0], g.queries[qi]...)
		f.query[slot].Store(int32(qi))
		id := f.next(slot)
		f.ids[slot].Store(uint32(id))
		setMsgID(bufs[k], id)
		out = append(out, ipv4.Message{Buffers: [][]byte{bufs[k]}})
		slotOf = append(slotOf, slot)
		if len(out) == udpBatch {
			return flush()
		}
		return nil
	}, flush)
}

// batching: a UDP socket's batch reads and writes, IPv4 or IPv6 by its peer (connected) or
// its own address (listening).
func batching(c net.Conn) (batchConn, error) {
	u, ok := c.(*net.UDPConn)
	if !ok {
		return nil, errors.New("not a UDP socket")
	}
	addr, _ := u.RemoteAddr().(*net.UDPAddr)
	if addr == nil {
		addr, _ = u.LocalAddr().(*net.UDPAddr)
	}
	if addr != nil && addr.IP.To4() == nil {
		return ipv6.NewPacketConn(u), nil
	}
	return ipv4.NewPacketConn(u), nil
}

// unsent: a query the socket refused to send is no query in flight (counted as a net error).
func (g *streamGen) unsent(s *slots, f *udpFlight, slot int) {
	if s.sentAt[slot].Swap(0) != 0 {
		f.ids[slot].Store(noQuery)
		s.free <- slot
	}
}

// udpReader: the socket's answers, in batches, until the socket is closed.
func (g *streamGen) udpReader(s *slots, f *udpFlight, bc batchConn) {
	defer s.wg.Done()
	defer s.fail()
	size := max(4096, g.cfg.bufsize)
	ms := make([]ipv4.Message, udpBatch)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, size)}
	}
	for {
		n, err := bc.ReadBatch(ms, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// a connected socket reports a port unreachable (ICMP) here, once per message
			g.c.netErrors.Add(1)
			continue
		}
		for _, m := range ms[:n] {
			g.udpAnswer(s, f, m.Buffers[0][:m.N])
		}
	}
}

// udpAnswer matches one answer to its query by message ID and question. An answer to no
// query in flight is late (its query timed out, or a slot's earlier query) or mismatched
// (no such ID, or another question: its query stays in flight).
func (g *streamGen) udpAnswer(s *slots, f *udpFlight, b []byte) {
	if len(b) < 12 || !msgQR(b) {
		g.c.mismatched.Add(1)
		return
	}
	id := int(msgID(b))
	if id >= f.span {
		g.c.mismatched.Add(1)
		return
	}
	slot := id % len(f.ids)
	at := s.sentAt[slot].Load()
	if at == 0 || f.ids[slot].Load() != uint32(id) {
		g.c.late.Add(1)
		return
	}
	q := g.queries[f.query[slot].Load()]
	end := questionEnd(q)
	if len(b) < end || !bytes.Equal(b[12:end], q[12:end]) {
		g.c.mismatched.Add(1)
		return
	}
	// claimed only if the slot still holds that query (not timed out and reused meanwhile)
	if !s.sentAt[slot].CompareAndSwap(at, 0) {
		g.c.late.Add(1)
		return
	}
	f.ids[slot].Store(noQuery)
	if msgTC(b) {
		g.c.truncated.Add(1)
	}
	if !g.answered(b, time.Unix(0, at)) { // late, before the sweep came round to it: lost
		g.c.timeouts.Add(1)
	}
	s.free <- slot
}
