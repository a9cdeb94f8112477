package sandbox

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// encodePlan writes the plan in the init stage's wire format (read by
// read_plan in init_linux.c): records of one tag byte, a 4-byte
// little-endian payload length, and the payload, whose fields are
// NUL-terminated. A format this small needs no JSON parser in C. mounts
// is the mount block: the records the init's new root and Landlock
// ruleset come from (M, W, m, l, r and n), together, which is what the
// mount cache holds.
func encodePlan(p *Plan) (data, mounts []byte) {
	b := []byte{0, 0, 0, 0} // the length, filled in below
	rec := func(tag byte, fields ...string) {
		n := 0
		for _, f := range fields {
			n += len(f) + 1
		}
		b = append(b, tag)
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for _, f := range fields {
			b = append(append(b, f...), 0)
		}
	}
	if p.Trace {
		rec('T')
	}
	rec('h', p.Hostname)
	rec('d', p.Dir)
	rec('p', p.Path)
	for _, a := range p.Argv {
		rec('a', a)
	}
	for _, e := range p.Env {
		rec('e', e)
	}
	start := len(b)
	if p.LegacyMounts {
		rec('M')
	}
	if p.MountPause > 0 {
		rec('W', strconv.FormatInt(p.MountPause.Microseconds(), 10))
	}
	kinds := map[MountKind]string{MountTmpfs: "t", MountProc: "p", MountBind: "b", MountDev: "v", MountSymlnk: "l", MountDir: "d", MountCopy: "c", MountFile: "w"}
	for _, m := range p.Mounts {
		var flags strings.Builder
		flags.WriteByte('-')
		if m.ReadOnly {
			flags.WriteByte('r')
		}
		if m.NoExec {
			flags.WriteByte('x')
		}
		if m.Dir {
			flags.WriteByte('D')
		}
		rec('m', kinds[m.Kind], flags.String(), m.Source, m.Target)
	}
	l := p.Landlock
	rec('l', strconv.Itoa(l.ABI), strconv.FormatUint(l.HandledFS, 10), strconv.FormatUint(l.HandledNet, 10), strconv.FormatUint(l.Scoped, 10))
	for _, r := range l.Rules {
		rec('r', strconv.FormatUint(r.Access, 10), r.Path)
	}
	for _, r := range l.PortRules {
		rec('n', strconv.FormatUint(r.Access, 10), strconv.Itoa(r.Port))
	}
	end := len(b)
	for _, h := range p.Held {
		held := "0"
		if h.Held {
			held = "1"
		}
		rec('H', h.Path, held, strconv.FormatUint(uint64(h.Major), 10), strconv.FormatUint(uint64(h.Minor), 10), strconv.FormatUint(h.Ino, 10))
	}
	if p.Proxy != nil {
		rec('P', strconv.Itoa(p.Proxy.Port))
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	return b, b[start:end:end]
}
