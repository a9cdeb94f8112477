package usernotif

import (
	"net/netip"
	"sync"
)

// Originals are the destinations of the connections the supervisor
// redirected to the egress proxy, by each socket's own address: the
// supervisor records one before it connects the socket, the proxy takes
// it when it accepts the connection. The zero value is empty and ready.
type Originals struct {
	mu sync.Mutex
	m  map[netip.AddrPort]netip.AddrPort
}

// maxOriginals caps the records waiting for their connection: one per
// connect in flight, so only a command holding that many half-made
// connections meets it (its next redirect is then refused).
const maxOriginals = 1 << 16

// record notes that the connection from from is meant for dest; false
// when too many are waiting.
func (o *Originals) record(from, dest netip.AddrPort) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[netip.AddrPort]netip.AddrPort{}
	}
	if len(o.m) >= maxOriginals {
		return false
	}
	o.m[from] = dest
	return true
}

// forget drops the record of a connection that was not made.
func (o *Originals) forget(from netip.AddrPort) {
	o.mu.Lock()
	delete(o.m, from)
	o.mu.Unlock()
}

// Take returns and forgets where the connection from from was going.
func (o *Originals) Take(from netip.AddrPort) (netip.AddrPort, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	dest, ok := o.m[from]
	if ok {
		delete(o.m, from)
	}
	return dest, ok
}
