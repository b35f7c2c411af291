package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// The responder's encrypted transports: DNS over TLS (RFC 7858: the TCP framing inside TLS)
// and DNS over HTTPS (RFC 8484 over HTTP/2, h2.go: GET with ?dns=<base64url> and POST with
// an application/dns-message body), answering exactly as over UDP and TCP. The certificate is
// the one given (the lab's, made when the lab comes up), else an ephemeral self-signed
// ECDSA P-256 one. What each connection negotiated (TLS version, cipher suite, ALPN) is
// counted, so a run records what the generator spoke.

// tlsSessions counts connections by what they negotiated ("TLS 1.3 TLS_AES_128_GCM_SHA256 h2").
type tlsSessions struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (s *tlsSessions) add(state tls.ConnectionState) {
	key := tls.VersionName(state.Version) + " " + tls.CipherSuiteName(state.CipherSuite)
	if state.NegotiatedProtocol != "" {
		key += " " + state.NegotiatedProtocol
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[string]int64{}
	}
	s.counts[key]++
}

func (s *tlsSessions) snapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// encryptedStats: the DoT and DoH counters of a serve run.
type encryptedStats struct {
	dotQueries, dotConns, dohQueries, dohGet, dohPost, dohConns, dohBad atomic.Int64
	sessions                                                            tlsSessions
}

// serverCertificate loads the PEM pair, or makes an ephemeral self-signed one for addr.
func serverCertificate(certFile, keyFile string, addr netip.Addr) (tls.Certificate, string, error) {
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return tls.Certificate{}, "", errors.New("-cert and -key go together")
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, "", fmt.Errorf("cannot load -cert/-key: %v", err)
		}
		return cert, certFile, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "dnsload serve"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{addr.AsSlice()},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, "ephemeral ECDSA P-256", nil
}

// serverTLS: the responder's TLS settings (Go's defaults: TLS 1.2 and 1.3, the client's
// preference among AEAD suites; `protocols` the ALPN it offers), counting what each
// handshake negotiated.
func serverTLS(cert tls.Certificate, enc *encryptedStats, protocols ...string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   protocols,
		VerifyConnection: func(state tls.ConnectionState) error {
			enc.sessions.add(state)
			return nil
		},
	}
}

// acceptLoop hands every connection l accepts to `serve` in a goroutine of its own, counted
// by `accepted` and closed by the caller through `conns` at the end.
func acceptLoop(l net.Listener, accepted *atomic.Int64, conns *sync.Map, wg *sync.WaitGroup,
	serve func(net.Conn)) {
	defer wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		accepted.Add(1)
		conns.Store(c, true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conns.Delete(c)
			serve(c)
		}()
	}
}

// serveTLS answers one accepted TLS connection: as a TCP connection (DoT), or as HTTP/2
// (DoH, h2.go).
func serveTLS(c net.Conn, doh bool, cfg *serveConfig, st *serveStats, enc *encryptedStats) {
	tc := c.(*tls.Conn)
	if doh {
		serveDoHConn(tc, cfg, cfg.dohPath, st, enc)
		return
	}
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		tc.Close()
		return
	}
	serveStream(tc, cfg, &enc.dotQueries, &st.dropped)
}

// serveStream answers length-framed DNS messages on a stream (TCP or TLS) until it closes.
// Answers are written in batches: the output is flushed whenever the next read would wait,
// so pipelined queries cost one write (one TLS record) per batch, not one per answer.
func serveStream(c net.Conn, cfg *serveConfig, queries, dropped *atomic.Int64) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 65536)
	w := bufio.NewWriterSize(c, 65536)
	q := make([]byte, 65535)
	out := make([]byte, 0, 65537)
	var lb [2]byte
	read := func(b []byte) error {
		if r.Buffered() < len(b) && w.Buffered() > 0 {
			_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := w.Flush(); err != nil {
				return err
			}
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadFull(r, b)
		return err
	}
	for {
		if err := read(lb[:]); err != nil {
			return
		}
		n := int(lb[0])<<8 | int(lb[1])
		if err := read(q[:n]); err != nil {
			return
		}
		queries.Add(1)
		var ok bool
		out, ok = buildAnswer(append(out[:0], 0, 0), q[:n], false, cfg.tcpSize)
		if !ok {
			dropped.Add(1)
			_ = w.Flush()
			return
		}
		size := len(out) - 2
		out[0], out[1] = byte(size>>8), byte(size)
		if _, err := w.Write(out); err != nil {
			return
		}
	}
}
