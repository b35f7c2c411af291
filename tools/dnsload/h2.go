package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The responder's DNS over HTTPS, on the HTTP/2 frame layer itself: one goroutine per
// connection reads frames, answers each request as soon as it is whole (GET: its ?dns=
// parameter; POST: its body) and writes the answers in batches, flushed when no more input
// is waiting. Go's net/http server answered ~11k requests/s on a core here, slower than the
// servers under test, so a ceiling measured against it would have been its own; this one
// costs a few microseconds a request.

const (
	h2Preface       = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	h2MaxStreams    = 4096
	h2StreamWindow  = 1 << 20 // what a client may send us per stream (POST bodies)
	h2ConnWindow    = 1 << 30 // ... and in all; replenished at half
	h2DefaultWindow = 65535
)

type h2Answer struct {
	stream uint32
	body   []byte
}

// h2Conn: one DoH connection's state, owned by its goroutine.
type h2Conn struct {
	tc       *tls.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	fr       *http2.Framer
	enc      *hpack.Encoder
	hbuf     bytes.Buffer
	cfg      *serveConfig
	path     string
	queries  *atomic.Int64
	stats    *encryptedStats
	dropped  *atomic.Int64
	bodies   map[uint32][]byte // POST streams still receiving their body
	consumed int64             // bytes received since the last connection window update
	sendWin  int64             // what the client lets us send on the connection
	streamW  int64             // the client's initial window per stream
	waiting  []h2Answer        // answers held back by the client's flow control
}

func serveDoHConn(tc *tls.Conn, cfg *serveConfig, path string, st *serveStats,
	enc *encryptedStats) {
	defer tc.Close()
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
		enc.dohBad.Add(1)
		return
	}
	h := &h2Conn{tc: tc, br: bufio.NewReaderSize(tc, 65536), bw: bufio.NewWriterSize(tc, 65536),
		cfg: cfg, path: path, queries: &enc.dohQueries, stats: enc, dropped: &st.dropped,
		bodies: map[uint32][]byte{}, sendWin: h2DefaultWindow, streamW: h2DefaultWindow}
	h.fr = http2.NewFramer(h.bw, h.br)
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.fr.MaxHeaderListSize = 16 << 10
	h.enc = hpack.NewEncoder(&h.hbuf)
	preface := make([]byte, len(h2Preface))
	if _, err := io.ReadFull(h.br, preface); err != nil || string(preface) != h2Preface {
		enc.dohBad.Add(1)
		return
	}
	if h.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: h2MaxStreams},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow}) != nil ||
		h.fr.WriteWindowUpdate(0, h2ConnWindow-h2DefaultWindow) != nil {
		return
	}
	_ = h.serve()
}

func (h *h2Conn) serve() error {
	for {
		if h.br.Buffered() == 0 && h.bw.Buffered() > 0 {
			_ = h.tc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := h.bw.Flush(); err != nil {
				return err
			}
		}
		_ = h.tc.SetReadDeadline(time.Now().Add(30 * time.Second))
		frame, err := h.fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := frame.(type) {
		case *http2.MetaHeadersFrame:
			err = h.request(f)
		case *http2.DataFrame:
			err = h.data(f)
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					h.streamW = int64(v)
				}
				err = h.fr.WriteSettingsAck()
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				h.sendWin += int64(f.Increment)
				err = h.release()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				err = h.fr.WritePing(true, f.Data)
			}
		case *http2.RSTStreamFrame:
			delete(h.bodies, f.StreamID)
		case *http2.GoAwayFrame:
			_ = h.bw.Flush()
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// request: a request's headers; a GET is answered at once, a POST once its body is in.
func (h *h2Conn) request(f *http2.MetaHeadersFrame) error {
	method, target := f.PseudoValue("method"), f.PseudoValue("path")
	switch {
	case method == "GET":
		h.stats.dohGet.Add(1)
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Path != h.path {
			return h.reply(f.StreamID, 404, nil)
		}
		query, err := base64.RawURLEncoding.DecodeString(u.Query().Get("dns"))
		if err != nil {
			return h.reply(f.StreamID, 400, nil)
		}
		return h.answer(f.StreamID, query)
	case method == "POST":
		h.stats.dohPost.Add(1)
		if target != h.path {
			return h.reply(f.StreamID, 404, nil)
		}
		if f.StreamEnded() {
			return h.answer(f.StreamID, nil)
		}
		h.bodies[f.StreamID] = make([]byte, 0, 128)
		return nil
	default:
		return h.reply(f.StreamID, 405, nil)
	}
}

func (h *h2Conn) data(f *http2.DataFrame) error {
	h.consumed += int64(f.Length)
	if h.consumed >= h2ConnWindow/2 {
		if err := h.fr.WriteWindowUpdate(0, uint32(h.consumed)); err != nil {
			return err
		}
		h.consumed = 0
	}
	body, ok := h.bodies[f.StreamID]
	if !ok {
		return nil
	}
	body = append(body, f.Data()...)
	if len(body) > 65535 {
		delete(h.bodies, f.StreamID)
		return h.reply(f.StreamID, 413, nil)
	}
	if !f.StreamEnded() {
		h.bodies[f.StreamID] = body
		return nil
	}
	delete(h.bodies, f.StreamID)
	return h.answer(f.StreamID, body)
}

// answer: the canned answer to one DNS query as a 200, or a 400 for what is not a query.
func (h *h2Conn) answer(stream uint32, query []byte) error {
	out, ok := buildAnswer(make([]byte, 0, 512), query, false, h.cfg.tcpSize)
	if !ok {
		h.dropped.Add(1)
		h.stats.dohBad.Add(1)
		return h.reply(stream, 400, nil)
	}
	h.queries.Add(1)
	return h.reply(stream, 200, out)
}

// reply writes the response headers and body, or holds them while the client's window is
// too small for the body (an answer is far smaller than any stream's window).
func (h *h2Conn) reply(stream uint32, status int, body []byte) error {
	if status != 200 {
		h.stats.dohBad.Add(1)
	}
	if int64(len(body)) > h.sendWin || len(h.waiting) > 0 {
		h.waiting = append(h.waiting, h2Answer{stream, body})
		return h.writeHeaders(stream, status, len(body), false)
	}
	if err := h.writeHeaders(stream, status, len(body), len(body) == 0); err != nil {
		return err
	}
	return h.writeBody(stream, body)
}

func (h *h2Conn) writeHeaders(stream uint32, status, length int, end bool) error {
	h.hbuf.Reset()
	fields := []hpack.HeaderField{{Name: ":status", Value: strconv.Itoa(status)}}
	if status == 200 {
		fields = append(fields,
			hpack.HeaderField{Name: "content-type", Value: "application/dns-message"},
			hpack.HeaderField{Name: "cache-control", Value: "max-age=300"})
	}
	fields = append(fields, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(length)})
	for _, field := range fields {
		if err := h.enc.WriteField(field); err != nil {
			return err
		}
	}
	return h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream,
		BlockFragment: h.hbuf.Bytes(), EndHeaders: true, EndStream: end})
}

func (h *h2Conn) writeBody(stream uint32, body []byte) error {
	if len(body) == 0 {
		return nil
	}
	if int64(len(body)) > h.streamW {
		return errors.New("answer larger than the client's stream window")
	}
	h.sendWin -= int64(len(body))
	return h.fr.WriteData(stream, true, body)
}

// release sends the answers that waited for the client's window.
func (h *h2Conn) release() error {
	for len(h.waiting) > 0 && int64(len(h.waiting[0].body)) <= h.sendWin {
		next := h.waiting[0]
		h.waiting = h.waiting[1:]
		var err error
		if len(next.body) == 0 {
			err = h.fr.WriteData(next.stream, true, nil)
		} else {
			err = h.writeBody(next.stream, next.body)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
