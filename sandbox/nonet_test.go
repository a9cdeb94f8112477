package sandbox

import (
	"bytes"
	"testing"
)

// query is a DNS query for name (type A, class IN), id 0x1234, RD set.
func query(labels ...string) []byte {
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range labels {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, 0, 1, 0, 1)
}

func TestNXDomain(t *testing.T) {
	q := query("Registry", "NPMJS", "org")
	reply, name, ok := nxdomain(q)
	if !ok || name != "registry.npmjs.org" {
		t.Fatalf("name %q, ok %v", name, ok)
	}
	if !bytes.Equal(reply[:2], q[:2]) || reply[2] != 0x81 || reply[3] != 0x83 || !bytes.Equal(reply[4:6], []byte{0, 1}) || !bytes.Equal(reply[6:12], make([]byte, 6)) {
		t.Errorf("header % x, want the id, QR|RD, RA|NXDOMAIN, one question, no records", reply[:12])
	}
	if !bytes.Equal(reply[12:], q[12:]) {
		t.Errorf("question % x, want it echoed", reply[12:])
	}
	for _, odd := range [][]byte{query("*"), query("a\nb", "test"), query("preset:private")} {
		if _, name, ok := nxdomain(odd); !ok || name != "" {
			t.Errorf("%q: noted %q (answered %v); want an answer and no name noted", odd[13:], name, ok)
		}
	}
	for name, bad := range map[string][]byte{
		"short":        q[:11],
		"a response":   append([]byte{0x12, 0x34, 0x81, 0x00}, q[4:]...),
		"two":          append(append([]byte{}, q[:5]...), append([]byte{2}, q[6:]...)...),
		"compressed":   append(append([]byte{}, q[:12]...), 0xc0, 0x0c, 0, 1, 0, 1),
		"cut label":    append(append([]byte{}, q[:12]...), 9, 'a'),
		"no type":      q[:len(q)-3],
		"opcode other": append([]byte{0x12, 0x34, 0x28, 0x00}, q[4:]...),
	} {
		if _, _, ok := nxdomain(bad); ok {
			t.Errorf("%s: answered", name)
		}
	}
}

func FuzzNXDomain(f *testing.F) {
	f.Add(query("example", "com"))
	f.Fuzz(func(t *testing.T, q []byte) {
		if reply, _, ok := nxdomain(q); ok && (len(reply) < 12 || reply[3]&0x0f != 3) {
			t.Fatalf("reply % x", reply)
		}
	})
}
