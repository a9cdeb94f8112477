package sandbox

import (
	"net"
	"strings"
)

// maxLookups is how many distinct names a run without network notes.
const maxLookups = 16

// serveNoNetwork answers every DNS query on pc, the resolver of a sandbox
// without network, with NXDOMAIN ("no such name"): a resolver that does
// not answer makes clients wait and retry (npm's EAI_AGAIN took 71 s),
// one that answers no-such-name makes them fail at once (ENOTFOUND, which
// npm does not retry). Each name asked goes to noted. It returns when pc
// is closed.
func serveNoNetwork(pc net.PacketConn, noted func(string)) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		reply, name, ok := nxdomain(buf[:n])
		if !ok {
			continue
		}
		if name != "" {
			noted(name)
		}
		pc.WriteTo(reply, from)
	}
}

// nxdomain turns a DNS query into its NXDOMAIN answer (the header with
// QR, RA and RCODE 3 set, no answers, the question echoed) and returns the
// question's name, lower case, without its final dot. ok is false for a
// message that is no query with one question.
func nxdomain(q []byte) (reply []byte, name string, ok bool) {
	if len(q) < 12 || q[2]&0x80 != 0 || q[2]&0x78 != 0 || q[4] != 0 || q[5] != 1 {
		return nil, "", false // a response, not a standard QUERY, or not one question
	}
	var labels []string
	i := 12
	for {
		if i >= len(q) {
			return nil, "", false
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(q) {
			return nil, "", false // compression in a question, or cut short
		}
		labels = append(labels, strings.ToLower(string(q[i:i+l])))
		i += l
	}
	// Only a host name's letters, digits, '-' and '_' are noted: the name
	// goes into corral's own warning and the grant it suggests, which
	// must not say "*" or carry a line of the command's choosing.
	name = strings.Join(labels, ".")
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			name = ""
			break
		}
	}
	if i+4 > len(q) {
		return nil, "", false
	}
	end := i + 4 // type and class
	reply = make([]byte, end)
	copy(reply, q[:end])
	reply[2] = 0x80 | q[2]&0x01 // QR, RD as asked
	reply[3] = 0x80 | 3         // RA, NXDOMAIN
	for j := 6; j < 12; j++ {
		reply[j] = 0 // no answer, authority or additional records
	}
	return reply, name, true
}
