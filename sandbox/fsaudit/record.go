package fsaudit

import (
	"encoding/hex"
	"strconv"
	"strings"
)

// The audit record types this package reads (linux/audit.h; Landlock's
// two are newer than most installed headers).
const (
	typeSyscall  = 1300 // AUDIT_SYSCALL: pid, comm, exe of the event's task
	typeEOE      = 1320 // AUDIT_EOE: end of a multi-record event
	typeAccess   = 1423 // AUDIT_LANDLOCK_ACCESS: domain, blockers, path
	typeDomain   = 1424 // AUDIT_LANDLOCK_DOMAIN: domain status, creator pid
	typeListener = 1335 // AUDIT_EVENT_LISTENER: a process joined or left the group
	groupReadLog = 1    // AUDIT_NLGRP_READLOG
)

// Denial is one access Landlock refused in the run.
type Denial struct {
	// Path is the object's path as the sandbox sees it (its root).
	Path string
	// Blockers are Landlock's rights that were missing: fs.read_file,
	// fs.write_file, fs.make_reg, fs.execute, ...
	Blockers []string
	// Pid, Comm and Exe are the task that tried (0 and "" when the
	// kernel wrote no syscall record for the event).
	Pid       int
	Comm, Exe string
}

// fields splits an audit record's text ("audit(T:SERIAL): k=v k=v ...")
// into its serial and its fields. Values are decoded: a quoted one is
// taken as is, an unquoted one that is all hex digits of even length is
// what audit_log_untrustedstring writes for a value with spaces, quotes
// or control characters, and is decoded when the key is one of those the
// kernel encodes that way.
func fields(text string) (serial string, kv map[string]string) {
	kv = map[string]string{}
	rest, ok := strings.CutPrefix(text, "audit(")
	if !ok {
		return "", kv
	}
	stamp, rest, ok := strings.Cut(rest, "): ")
	if !ok {
		return "", kv
	}
	if _, s, ok := strings.Cut(stamp, ":"); ok {
		serial = s
	}
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" {
			break
		}
		var val string
		if strings.HasPrefix(after, `"`) {
			end := strings.IndexByte(after[1:], '"')
			if end < 0 {
				val, rest = after[1:], ""
			} else {
				val, rest = after[1:1+end], after[2+end:]
			}
		} else {
			val, rest, _ = strings.Cut(after, " ")
			if untrusted[key] {
				if b, err := hex.DecodeString(val); err == nil && val != "(null)" {
					val = string(b)
				}
			}
		}
		kv[key] = val
	}
	return serial, kv
}

// untrusted are the keys whose values the kernel hex-encodes when they
// hold characters that would break the record's syntax.
var untrusted = map[string]bool{"path": true, "comm": true, "exe": true, "name": true}

// event gathers the records of one audit event (one serial).
type event struct {
	access  []access
	domains map[string]int // domain id → creator pid (status=allocated)
	pid     int
	comm    string
	exe     string
}

type access struct {
	domain, path string
	blockers     []string
}

// add folds one record into the event.
func (e *event) add(typ int, kv map[string]string) {
	switch typ {
	case typeAccess:
		var bl []string
		if b := kv["blockers"]; b != "" {
			bl = strings.Split(b, ",")
		}
		e.access = append(e.access, access{domain: kv["domain"], path: kv["path"], blockers: bl})
	case typeDomain:
		if kv["status"] == "allocated" {
			if pid, err := strconv.Atoi(kv["pid"]); err == nil {
				if e.domains == nil {
					e.domains = map[string]int{}
				}
				e.domains[kv["domain"]] = pid
			}
		}
	case typeSyscall:
		e.pid, _ = strconv.Atoi(kv["pid"])
		e.comm, e.exe = kv["comm"], kv["exe"]
	}
}
