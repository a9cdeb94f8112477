package netns

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
)

// FakeDNS is the resolver inside a sandbox with transparent egress. It
// answers every A query with an address of its own from FakePool and
// remembers which name it gave each address; the proxy, seeing a
// connection to that address, decides and dials the name (resolving it
// itself, rebinding-safe), never the fake address. AAAA and every other
// type get an empty answer, so clients fall back to the IPv4 address
// instead of waiting. Nothing is ever looked up on the host's resolver
// from here: what a name really resolves to is the proxy's business,
// and only once the name is allowed.
type FakeDNS struct {
	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
	next   uint32 // the next address's offset in the pool
}

// FakePool is where the fake addresses come from: 198.18.0.0/15, set
// aside for benchmarking (RFC 2544) and never routed on the Internet.
var FakePool = netip.MustParsePrefix("198.18.0.0/15")

// maxFakeNames caps the names one run may have resolved: each costs a
// map entry for the run's life. Past it, a new name gets SERVFAIL.
const maxFakeNames = 1 << 14

// fakeTTL is the time to live of an answer, in seconds.
const fakeTTL = 60

// NewFakeDNS returns an empty resolver.
func NewFakeDNS() *FakeDNS {
	return &FakeDNS{byName: map[string]netip.Addr{}, byAddr: map[netip.Addr]string{}}
}

// Address is the fake address of name, given it now if it had none;
// false when the pool for this run is used up.
func (d *FakeDNS) Address(name string) (netip.Addr, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.byName[name]; ok {
		return a, true
	}
	if d.next >= maxFakeNames {
		return netip.Addr{}, false
	}
	d.next++
	b := FakePool.Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) + d.next
	binary.BigEndian.PutUint32(b[:], v)
	a := netip.AddrFrom4(b)
	d.byName[name], d.byAddr[a] = a, name
	return a, true
}

// Name is the name fake address a was given; false for an address the
// resolver never gave.
func (d *FakeDNS) Name(a netip.Addr) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.byAddr[a.Unmap()]
	return n, ok
}

// IsFake tells an address of the pool, given or not.
func IsFake(a netip.Addr) bool { return FakePool.Contains(a.Unmap()) }

// Serve answers queries on pc until it is closed.
func (d *FakeDNS) Serve(pc net.PacketConn) error {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if out := d.answer(buf[:n]); out != nil {
			pc.WriteTo(out, from)
		}
	}
}

// DNS header flags and codes (RFC 1035 4.1.1).
const (
	dnsQR       = 1 << 15
	dnsAA       = 1 << 10
	dnsRD       = 1 << 8
	dnsRA       = 1 << 7
	rcodeOK     = 0
	rcodeFormat = 1
	rcodeFail   = 2
	rcodeNoName = 3
	rcodeNotImp = 4
	typeA       = 1
	classIN     = 1
	dnsHeader   = 12
)

// answer makes the response to one query message; nil for what is not a
// query at all (a response, or shorter than a header): no answer.
func (d *FakeDNS) answer(q []byte) []byte {
	if len(q) < dnsHeader {
		return nil
	}
	flags := binary.BigEndian.Uint16(q[2:])
	if flags&dnsQR != 0 {
		return nil
	}
	reply := func(rcode int, question []byte, answer []byte) []byte {
		out := make([]byte, dnsHeader, dnsHeader+len(question)+len(answer))
		copy(out, q[:2])
		f := uint16(dnsQR|dnsAA|dnsRA) | flags&(0xf<<11|dnsRD) | uint16(rcode)
		binary.BigEndian.PutUint16(out[2:], f)
		if question != nil {
			binary.BigEndian.PutUint16(out[4:], 1)
		}
		if answer != nil {
			binary.BigEndian.PutUint16(out[6:], 1)
		}
		return append(append(out, question...), answer...)
	}
	if op := flags >> 11 & 0xf; op != 0 {
		return reply(rcodeNotImp, nil, nil)
	}
	if binary.BigEndian.Uint16(q[4:]) != 1 {
		return reply(rcodeFormat, nil, nil)
	}
	name, end, ok := readName(q, dnsHeader)
	if !ok || end+4 > len(q) {
		return reply(rcodeFormat, nil, nil)
	}
	question := q[dnsHeader : end+4]
	qtype, qclass := binary.BigEndian.Uint16(q[end:]), binary.BigEndian.Uint16(q[end+2:])
	if !validName(name) {
		return reply(rcodeNoName, question, nil)
	}
	if qtype != typeA || qclass != classIN {
		return reply(rcodeOK, question, nil) // no data of that type
	}
	a, ok := d.Address(name)
	if !ok {
		return reply(rcodeFail, question, nil)
	}
	ip := a.As4()
	rr := []byte{0xc0, dnsHeader, 0, typeA, 0, classIN, 0, 0, 0, 0, 0, 4, ip[0], ip[1], ip[2], ip[3]}
	binary.BigEndian.PutUint32(rr[6:], fakeTTL)
	return reply(rcodeOK, question, rr)
}

// readName reads the uncompressed name at off (a query's question has no
// pointers) and returns it lower-cased without the final dot, and the
// offset after it.
func readName(m []byte, off int) (string, int, bool) {
	var b strings.Builder
	for {
		if off >= len(m) {
			return "", 0, false
		}
		l := int(m[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 || off+l > len(m) || b.Len()+l+1 > 254 {
			return "", 0, false
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(m[off : off+l])
		off += l
	}
	return strings.ToLower(b.String()), off, true
}

// validName accepts host names of letters, digits, '-' and '_' labels:
// what the proxy can check and resolve. A name with other bytes (a dot
// inside a label, a NUL, an escape) is NXDOMAIN, never a fake address.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
