package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/miekg/dns"
)

// loadQueries reads a dnsperf-style file ("name TYPE" per line, '#' comments) and packs each
// line once into wire format with ID 0 and an EDNS0 OPT of the given UDP size (0 = no EDNS).
func loadQueries(path string, bufsize int) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read query file: %v", err)
	}
	defer f.Close()
	return parseQueries(f, path, bufsize)
}

func parseQueries(r io.Reader, name string, bufsize int) ([][]byte, error) {
	var out [][]byte
	sc := bufio.NewScanner(r)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		fields := strings.Fields(line)
		qtype := "A"
		if len(fields) >= 2 {
			qtype = strings.ToUpper(fields[1])
		}
		t, ok := dns.StringToType[qtype]
		if !ok {
			return nil, fmt.Errorf("%s:%d: unknown query type %q", name, lineNo, fields[1])
		}
		wire, err := packQuery(fields[0], t, bufsize)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, lineNo, err)
		}
		out = append(out, wire)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("query file %s holds no queries", name)
	}
	return out, nil
}

func packQuery(name string, qtype uint16, bufsize int) ([]byte, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.Id = 0
	m.RecursionDesired = false
	if bufsize > 0 {
		m.SetEdns0(uint16(bufsize), false)
	}
	return m.Pack()
}

// Header fields read straight from the wire: the generator needs only these per answer.
func msgID(b []byte) uint16        { return binary.BigEndian.Uint16(b[0:2]) }
func msgTC(b []byte) bool          { return b[2]&0x02 != 0 }
func msgQR(b []byte) bool          { return b[2]&0x80 != 0 }
func msgRcode(b []byte) int        { return int(b[3] & 0x0f) }
func setMsgID(b []byte, id uint16) { binary.BigEndian.PutUint16(b[0:2], id) }
