package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The stream generator's DNS over HTTPS, on the HTTP/2 frame layer (as the responder's,
// h2.go): on each connection one goroutine writes requests (each a new stream: HEADERS for
// a GET, HEADERS and DATA for a POST) while a stream is free, another reads the answers and
// frees their streams, as framedSession does with message IDs. Go's http2 client, a
// goroutine and a lock per request, reached ~20k requests/s on a core and its tail grew
// with the streams in flight. At most what the server's SETTINGS_MAX_CONCURRENT_STREAMS
// allows is in flight on a connection.

type h2Stream struct {
	slot   int
	status int
	body   []byte
}

// dohClient: one DoH connection's shared state (the writer's and the reader's).
type dohClient struct {
	g         *streamGen
	c         net.Conn
	mu        sync.Mutex
	streams   map[uint32]*h2Stream // streams in flight, by ID
	sendWin   atomic.Int64         // what the server lets us send (POST bodies)
	streamW   atomic.Int64         // ... per stream
	ready     chan uint32          // the server's first SETTINGS: its max concurrent streams
	wmu       sync.Mutex           // the framer's writer: requests, and the reader's replies
	fr        *http2.Framer
	bw        *bufio.Writer
	authority string
}

// dohSession: DoH over one connection with `inflight` streams at most (and no more than the
// server's SETTINGS allow); true when it broke before the run's end.
func (g *streamGen) dohSession(c net.Conn, inflight int) bool {
	defer c.Close()
	d := &dohClient{g: g, c: c, streams: map[uint32]*h2Stream{}, ready: make(chan uint32, 1),
		bw: bufio.NewWriterSize(c, 65536), authority: g.cfg.server}
	d.sendWin.Store(h2DefaultWindow)
	d.streamW.Store(h2DefaultWindow)
	d.fr = http2.NewFramer(d.bw, bufio.NewReaderSize(c, 65536))
	d.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := d.bw.WriteString(h2Preface); err != nil ||
		d.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow},
			http2.Setting{ID: http2.SettingEnablePush, Val: 0}) != nil ||
		d.fr.WriteWindowUpdate(0, h2ConnWindow-h2DefaultWindow) != nil || d.bw.Flush() != nil {
		g.c.netErrors.Add(1)
		return true
	}
	s := newSlots(inflight)
	s.wg.Add(2)
	go func() { defer s.wg.Done(); defer s.fail(); d.read(s) }()
	go g.sweep(s, d.forget)
	select {
	case limit := <-d.ready:
		for i := 0; i < inflight && uint32(i) < limit; i++ {
			s.free <- i
		}
	case <-s.broken:
	case <-time.After(g.cfg.timeout): // no SETTINGS from the server
		g.c.netErrors.Add(1)
		s.fail()
	}
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	nextID := uint32(1)
	return g.pump(s, c, func(slot int) error {
		id := nextID
		nextID += 2
		if nextID > 1<<31-1 {
			return errors.New("stream IDs used up") // a new connection goes on
		}
		d.mu.Lock()
		d.streams[id] = &h2Stream{slot: slot}
		d.mu.Unlock()
		return d.request(enc, &hbuf, id, g.query())
	}, d.flush)
}

// requestHeaders HPACK-encodes one query's request headers into hbuf (reset first).
func requestHeaders(enc *hpack.Encoder, hbuf *bytes.Buffer, cfg *streamConfig, authority string, q []byte) error {
	hbuf.Reset()
	path := cfg.dohPath
	if cfg.dohMethod == "GET" {
		path += "?dns=" + base64.RawURLEncoding.EncodeToString(q)
	}
	fields := []hpack.HeaderField{{Name: ":method", Value: cfg.dohMethod},
		{Name: ":scheme", Value: "https"}, {Name: ":authority", Value: authority},
		{Name: ":path", Value: path, Sensitive: cfg.dohMethod == "GET" && !cfg.dohIndexPath},
		{Name: "accept", Value: "application/dns-message"}}
	if cfg.dohMethod == "POST" {
		fields = append(fields,
			hpack.HeaderField{Name: "content-type", Value: "application/dns-message"},
			hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(q))})
	}
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			return err
		}
	}
	return nil
}

func (d *dohClient) flush() error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.bw.Buffered() == 0 {
		return nil
	}
	return d.bw.Flush()
}

// request writes one query as a new stream (GET: in the path; POST: in the body).
func (d *dohClient) request(enc *hpack.Encoder, hbuf *bytes.Buffer, id uint32, q []byte) error {
	cfg := d.g.cfg
	if err := requestHeaders(enc, hbuf, cfg, d.authority, q); err != nil {
		return err
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if err := d.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
		BlockFragment: hbuf.Bytes(), EndHeaders: true, EndStream: cfg.dohMethod == "GET"}); err != nil {
		return err
	}
	if cfg.dohMethod == "GET" {
		return nil
	}
	// a query (tens of bytes) within the server's windows; wait for them otherwise
	for int64(len(q)) > d.sendWin.Load() || int64(len(q)) > d.streamW.Load() {
		d.wmu.Unlock()
		time.Sleep(time.Millisecond)
		d.wmu.Lock()
		if time.Now().After(d.g.deadline.Add(d.g.cfg.timeout)) {
			return errors.New("the server's flow control window stayed closed")
		}
	}
	d.sendWin.Add(-int64(len(q)))
	return d.fr.WriteData(id, true, q)
}

// forget drops a timed-out slot's stream (its late frames are then ignored).
func (d *dohClient) forget(slot int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, s := range d.streams {
		if s.slot == slot {
			delete(d.streams, id)
			return
		}
	}
}

// read handles the server's frames until the connection ends: answers free their slots.
func (d *dohClient) read(s *slots) {
	g := d.g
	var consumed int64
	settled := false
	for {
		_ = d.c.SetReadDeadline(time.Now().Add(g.cfg.timeout + 30*time.Second))
		frame, err := d.fr.ReadFrame()
		if err != nil {
			s.end(&g.c, endReason("read", err))
			return
		}
		switch f := frame.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				d.streamW.Store(int64(v))
			}
			limit := uint32(1 << 31)
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
				limit = v
			}
			d.wmu.Lock()
			err = d.fr.WriteSettingsAck()
			if err == nil {
				err = d.bw.Flush()
			}
			d.wmu.Unlock()
			if !settled {
				settled = true
				d.ready <- limit
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				d.sendWin.Add(int64(f.Increment))
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				d.wmu.Lock()
				err = d.fr.WritePing(true, f.Data)
				d.wmu.Unlock()
			}
		case *http2.GoAwayFrame:
			reason := "goaway " + f.ErrCode.String()
			if debug := f.DebugData(); len(debug) > 0 {
				reason += fmt.Sprintf(" %.40q", debug)
			}
			s.end(&g.c, "read: "+reason)
			return
		case *http2.MetaHeadersFrame:
			status, _ := strconv.Atoi(f.PseudoValue("status"))
			if st := d.stream(f.StreamID, f.StreamEnded()); st != nil {
				st.status = status
				if f.StreamEnded() {
					d.done(s, st)
				}
			}
		case *http2.DataFrame:
			consumed += int64(f.Length)
			if consumed >= h2ConnWindow/2 {
				d.wmu.Lock()
				err = d.fr.WriteWindowUpdate(0, uint32(consumed))
				d.wmu.Unlock()
				consumed = 0
			}
			if st := d.stream(f.StreamID, f.StreamEnded()); st != nil {
				st.body = append(st.body, f.Data()...)
				if f.StreamEnded() {
					d.done(s, st)
				}
			}
		case *http2.RSTStreamFrame:
			if st := d.stream(f.StreamID, true); st != nil {
				st.status = -1
				d.done(s, st)
			}
		}
		if err != nil {
			s.end(&g.c, endReason("write", err))
			return
		}
	}
}

// stream: the stream in flight with this ID (removed when `ending`), nil for one forgotten.
func (d *dohClient) stream(id uint32, ending bool) *h2Stream {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.streams[id]
	if ending {
		delete(d.streams, id)
	}
	return s
}

// done: a stream ended; its answer counts (a status other than 200 as a mismatch).
func (d *dohClient) done(s *slots, st *h2Stream) {
	status, _ := d.g.c.httpStatus.LoadOrStore(st.status, &atomic.Int64{})
	status.(*atomic.Int64).Add(1)
	d.g.slotAnswered(s, st.slot, st.body, st.status == 200 && len(st.body) >= 12)
}
