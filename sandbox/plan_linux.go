package sandbox

import (
	"encoding/binary"
	"strconv"
	"strings"

	"corral.dev/corral/sandbox/stage"
	"corral.dev/corral/sandbox/usernotif"
)

// encodePlan writes the plan in the init stage's wire format (protocol.h;
// read by corral_parse_plan in init_plan_linux.c): records of one tag byte, a 4-byte
// little-endian payload length, and the payload, whose fields are
// NUL-terminated. A format this small needs no JSON parser in C. mounts
// is the mount block: the records the init's new root and Landlock
// ruleset come from (legacy mounts, mount pause, mounts, Landlock and
// its rules), together, which is what the mount cache holds. held are
// the protected paths' files corral holds (RunOptions.Held).
// mountKinds are the kind fields of mount records (protocol.h).
var mountKinds = map[MountKind]byte{
	MountTmpfs:  stage.MountTmpfs,
	MountProc:   stage.MountProc,
	MountBind:   stage.MountBind,
	MountDev:    stage.MountDev,
	MountSymlnk: stage.MountSymlink,
	MountDir:    stage.MountDir,
	MountCopy:   stage.MountCopy,
	MountFile:   stage.MountFile,
	MountMask:   stage.MountMask,
}

func encodePlan(p *Plan, held []HeldFile) (data, mounts []byte) {
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
		rec(stage.RecTrace)
	}
	rec(stage.RecHostname, p.Hostname)
	rec(stage.RecDir, p.Dir)
	rec(stage.RecPath, p.Path)
	for _, a := range p.Argv {
		rec(stage.RecArg, a)
	}
	for _, e := range p.Env {
		rec(stage.RecEnv, e)
	}
	start := len(b)
	if p.LegacyMounts {
		rec(stage.RecLegacyMounts)
	}
	if p.MountPause > 0 {
		rec(stage.RecMountPause, strconv.FormatInt(p.MountPause.Microseconds(), 10))
	}
	for _, m := range p.Mounts {
		var flags strings.Builder
		flags.WriteByte('-')
		if m.ReadOnly {
			flags.WriteByte(stage.MountFlagRO)
		}
		if m.NoExec {
			flags.WriteByte(stage.MountFlagNoExec)
		}
		if m.Dir {
			flags.WriteByte(stage.MountFlagDir)
		}
		rec(stage.RecMount, string(mountKinds[m.Kind]), flags.String(), m.Source, m.Target)
	}
	l := p.Landlock
	rec(stage.RecLandlock, strconv.Itoa(l.ABI), strconv.FormatUint(l.HandledFS, 10), strconv.FormatUint(l.HandledNet, 10), strconv.FormatUint(l.Scoped, 10))
	for _, r := range l.Rules {
		rec(stage.RecRule, strconv.FormatUint(r.Access, 10), r.Path)
	}
	for _, r := range l.PortRules {
		rec(stage.RecPortRule, strconv.FormatUint(r.Access, 10), strconv.Itoa(r.Port))
	}
	end := len(b)
	for _, h := range held {
		held := "0"
		if h.Held {
			held = "1"
		}
		rec(stage.RecHeld, h.Path, held, strconv.FormatUint(uint64(h.Major), 10), strconv.FormatUint(uint64(h.Minor), 10), strconv.FormatUint(h.Ino, 10))
	}
	if p.Proxy != nil {
		rec(stage.RecProxy, strconv.Itoa(p.Proxy.Port))
		if p.Proxy.DNSPort != 0 {
			rec(stage.RecEgress, strconv.Itoa(p.Proxy.DNSPort))
		}
	} else if p.Resolver != 0 {
		rec(stage.RecEgress, strconv.Itoa(p.Resolver)) // the resolver alone
	}
	if l.LogFlags != 0 {
		rec(stage.RecLandlockLog, strconv.FormatUint(uint64(l.LogFlags), 10))
	}
	for _, n := range p.Notify {
		if nr, ok := usernotif.CreateSyscall(n.Syscall); ok {
			rec(stage.RecNotify, strconv.Itoa(nr), strconv.Itoa(n.Arg), strconv.FormatUint(n.Mask, 10))
		}
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	return b, b[start:end:end]
}
