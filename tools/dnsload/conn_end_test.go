package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// endReason names what ended a connection as a report counts it, whatever wraps the error.
func TestEndReason(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		side string
		err  error
		want string
	}{
		{"read", io.EOF, "read: eof"},
		{"read", fmt.Errorf("frame: %w", io.ErrUnexpectedEOF), "read: eof"},
		{"read", reset, "read: reset"},
		{"write", &net.OpError{Op: "write", Err: syscall.EPIPE}, "write: broken pipe"},
		{"read", fmt.Errorf("x: %w", net.ErrClosed), "read: closed here"},
		{"read", tls.AlertError(40), "read: tls alert 40"},
		{"read", timeout, "read: timeout"},
		{"write", errors.New("the server's flow control window stayed closed"),
			"write: the server's flow control window stayed closed"},
	} {
		if got := endReason(c.side, c.err); got != c.want {
			t.Errorf("endReason(%q, %v) = %q, want %q", c.side, c.err, got, c.want)
		}
	}
}

// A connection's end is counted once: by the first to see it, never for the run's own end.
func TestSlotsEndCountsTheFirstReasonOnly(t *testing.T) {
	var c streamCounters
	s := newSlots(1)
	s.end(&c, "read: eof")
	s.end(&c, "write: broken pipe")
	quiet := newSlots(1)
	quiet.end(&c, "")
	quiet.end(&c, "read: closed here")
	got := map[string]int64{}
	c.connEnds.Range(func(k, v any) bool { got[k.(string)] = v.(interface{ Load() int64 }).Load(); return true })
	if len(got) != 1 || got["read: eof"] != 1 {
		t.Errorf("conn ends %v, want only read: eof 1", got)
	}
	select {
	case <-quiet.broken:
	default:
		t.Error("a connection ended at the run's end is not marked broken")
	}
}
