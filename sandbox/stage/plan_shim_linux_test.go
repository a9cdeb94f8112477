//go:build corral_testhooks

package stage

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// record is one plan record: a tag byte, a 4-byte little-endian length,
// and NUL-terminated fields (protocol.h).
func record(tag byte, fields ...string) []byte {
	var payload []byte
	for _, f := range fields {
		payload = append(append(payload, f...), 0)
	}
	b := binary.LittleEndian.AppendUint32([]byte{tag}, uint32(len(payload)))
	return append(b, payload...)
}

func records(rs ...[]byte) []byte { return bytes.Join(rs, nil) }

// split reads data as records; ok is false when data is not a sequence of
// whole records.
func split(data []byte) (tags []byte, fields [][]string, spans [][2]int, ok bool) {
	for off := 0; off < len(data); {
		if len(data)-off < 5 {
			return nil, nil, nil, false
		}
		n := int(binary.LittleEndian.Uint32(data[off+1:]))
		if n > len(data)-off-5 {
			return nil, nil, nil, false
		}
		payload := data[off+5 : off+5+n]
		var fs []string
		for {
			i := bytes.IndexByte(payload, 0)
			if i < 0 {
				break
			}
			fs = append(fs, string(payload[:i]))
			payload = payload[i+1:]
		}
		tags = append(tags, data[off])
		fields = append(fields, fs)
		spans = append(spans, [2]int{off, off + 5 + n})
		off += 5 + n
	}
	return tags, fields, spans, true
}

var (
	plainInt  = regexp.MustCompile(`^[0-9]{1,9}$`)
	plainLong = regexp.MustCompile(`^[0-9]{1,18}$`)
)

// any stands for a field the model does not predict (a number C's
// strtoul or atoi reads in a way not worth mirroring).
const any = "\x00any"

func num(s string, plain *regexp.Regexp) string {
	if !plain.MatchString(s) {
		return any
	}
	v, _ := strconv.ParseUint(s, 10, 64)
	return strconv.FormatUint(v, 10)
}

// model says what the C parser read from data, which it accepted, in the
// order plan_shim_linux.c writes it.
func model(data []byte) (want [][]string, block [2]int) {
	tags, fields, spans, _ := split(data)
	var trace, legacy bool
	pause := "0"
	last := map[byte][]string{}
	var lists [256][][]string
	first, end, inBlock, after, scattered := 0, 0, false, false, false
	for i, tag := range tags {
		fs := fields[i]
		switch tag {
		case RecLegacyMounts, RecMount, RecLandlock, RecRule, RecPortRule, RecMountPause:
			if after {
				scattered = true
			}
			if !inBlock {
				first = spans[i][0]
			}
			inBlock, end = true, spans[i][1]
		default:
			if inBlock {
				after = true
			}
		}
		switch tag {
		case RecTrace:
			trace = true
		case RecLegacyMounts:
			legacy = true
		case RecMountPause:
			pause = num(fs[0], plainLong)
		case RecHostname, RecDir, RecPath:
			last[tag] = []string{fs[0]}
		case RecLandlock:
			last[tag] = []string{num(fs[0], plainInt), num(fs[1], plainLong), num(fs[2], plainLong), num(fs[3], plainLong)}
		case RecProxy, RecEgress:
			last[tag] = []string{num(fs[0], plainInt)}
		case RecLandlockLog:
			last[tag] = []string{num(fs[0], plainInt)}
		case RecArg, RecEnv:
			lists[tag] = append(lists[tag], []string{fs[0]})
		case RecMount:
			kind := 0
			if fs[0] != "" {
				kind = int(fs[0][0])
			}
			flags := "-"
			for _, f := range []byte{MountFlagRO, MountFlagNoExec, MountFlagDir} {
				if strings.IndexByte(fs[1], f) >= 0 {
					flags += string(f)
				}
			}
			lists[tag] = append(lists[tag], []string{strconv.Itoa(kind), flags, fs[2], fs[3]})
		case RecRule:
			lists[tag] = append(lists[tag], []string{num(fs[0], plainLong), fs[1]})
		case RecPortRule:
			lists[tag] = append(lists[tag], []string{num(fs[0], plainLong), num(fs[1], plainLong)})
		case RecNotify:
			lists[tag] = append(lists[tag], []string{num(fs[0], plainInt), num(fs[1], plainInt), num(fs[2], plainLong)})
		case RecHeld:
			held := "0"
			if strings.HasPrefix(fs[1], "1") {
				held = "1"
			}
			lists[tag] = append(lists[tag], []string{fs[0], held, num(fs[2], plainInt), num(fs[3], plainInt), num(fs[4], plainLong)})
		}
	}
	put := func(tag byte, fs ...string) { want = append(want, append([]string{string(tag)}, fs...)) }
	if trace {
		put(RecTrace)
	}
	if legacy {
		put(RecLegacyMounts)
	}
	put(RecMountPause, pause)
	for _, tag := range []byte{RecHostname, RecDir, RecPath} {
		if fs, ok := last[tag]; ok {
			put(tag, fs...)
		}
	}
	for _, tag := range []byte{RecArg, RecEnv, RecMount} {
		for _, fs := range lists[tag] {
			put(tag, fs...)
		}
	}
	if fs, ok := last[RecLandlock]; ok {
		put(RecLandlock, fs...)
	} else {
		put(RecLandlock, "0", "0", "0", "0")
	}
	for _, tag := range []byte{RecRule, RecPortRule, RecHeld} {
		for _, fs := range lists[tag] {
			put(tag, fs...)
		}
	}
	if fs, ok := last[RecProxy]; ok {
		put(RecProxy, fs...)
	} else {
		put(RecProxy, "0")
	}
	if fs, ok := last[RecEgress]; ok {
		put(RecEgress, fs...)
	} else {
		put(RecEgress, "0")
	}
	if fs, ok := last[RecLandlockLog]; ok {
		put(RecLandlockLog, fs...)
	} else {
		put(RecLandlockLog, "0")
	}
	for _, fs := range lists[RecNotify] {
		put(RecNotify, fs...)
	}
	if inBlock && !scattered {
		block = [2]int{first, end}
	}
	return want, block
}

// canonicalPath is canonical() of init_plan_linux.c, written again.
func canonicalPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	if p == "/" {
		return true
	}
	for _, c := range strings.Split(p[1:], "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// checkParse parses data with the C parser and, when it accepts, checks
// it read every field as the model does and kept a cached block to the
// records and paths a cache may hold.
func checkParse(t *testing.T, data []byte, onlyMounts bool) error {
	t.Helper()
	got, block, err := parsePlan(data, onlyMounts)
	if err != nil {
		return err
	}
	tags, fields, _, ok := split(data)
	if !ok {
		t.Fatalf("accepted %q, which is not whole records", data)
	}
	if onlyMounts {
		for i, tag := range tags {
			if !strings.ContainsRune(string([]byte{RecLegacyMounts, RecMount, RecLandlock, RecRule, RecPortRule}), rune(tag)) {
				t.Fatalf("accepted record %q in a cached block: %q", tag, data)
			}
			if tag == RecMount {
				fs := fields[i]
				bound := fs[0] != "" && strings.IndexByte(string([]byte{MountBind, MountDev, MountCopy}), fs[0][0]) >= 0
				if !canonicalPath(fs[3]) || bound && !canonicalPath(fs[2]) {
					t.Fatalf("accepted a path that is not canonical in a cached block: %q", data)
				}
			}
		}
	}
	want, wantBlock := model(data)
	gtags, gfields, _, ok := split(got)
	if !ok || len(gtags) != len(want) {
		t.Fatalf("parsed %q as %q, want %q", data, got, want)
	}
	for i, tag := range gtags {
		w := want[i]
		g := append([]string{string(tag)}, gfields[i]...)
		if len(w) != len(g) || w[0] != g[0] {
			t.Fatalf("record %d: got %q, want %q (input %q)", i, g, w, data)
		}
		for j := 1; j < len(g); j++ {
			if w[j] != any && w[j] != g[j] {
				t.Fatalf("record %d field %d: got %q, want %q (input %q)", i, j, g[j], w[j], data)
			}
		}
	}
	if block != wantBlock {
		t.Fatalf("mount block %v, want %v (input %q)", block, wantBlock, data)
	}
	return nil
}

func samplePlan() []byte {
	return records(
		record(RecTrace),
		record(RecHostname, "corral"),
		record(RecDir, "/ws"),
		record(RecPath, "/usr/bin:/bin"),
		record(RecArg, "sh"), record(RecArg, "-c"), record(RecArg, "echo 'hi' \x01"),
		record(RecEnv, "HOME=/ws"),
		record(RecLegacyMounts),
		record(RecMountPause, "700000"),
		record(RecMount, string(rune(MountTmpfs)), "-", "", "/"),
		record(RecMount, string(rune(MountBind)), "-rxD", "/usr", "/usr"),
		record(RecMount, string(rune(MountFile)), "-r", "text\nwith lines", "/etc/hosts"),
		record(RecLandlock, "7", "65535", "3", "3"),
		record(RecRule, "8191", "/ws"),
		record(RecPortRule, "8", "8080"),
		record(RecHeld, "/ws/.bashrc", "1", "8", "1", "42"),
		record(RecProxy, "8080"),
		record(RecNotify, "257", "2", "64"), record(RecNotify, "83", "-1", "0"),
	)
}

func TestParsePlan(t *testing.T) {
	plan := samplePlan()
	if err := checkParse(t, plan, false); err != nil {
		t.Fatalf("the sample plan: %v", err)
	}
	got, block, _ := parsePlan(plan, false)
	if !bytes.Contains(got, []byte("echo 'hi' \x01\x00")) || block[0] == 0 || block[1] <= block[0] {
		t.Fatalf("parsed %q, block %v", got, block)
	}
	mounts := records(
		record(RecMount, string(rune(MountBind)), "-r", "/usr", "/usr"),
		record(RecLandlock, "7", "1", "0", "0"),
		record(RecRule, "1", "/usr"),
	)
	if err := checkParse(t, mounts, true); err != nil {
		t.Fatalf("a cached block: %v", err)
	}
	for _, c := range []struct {
		name       string
		data       []byte
		onlyMounts bool
		want       string
	}{
		{"truncated header", plan[:3], false, "truncated record header"},
		{"truncated record", plan[:len(plan)-1], false, "truncated record"},
		{"unterminated field", []byte{RecHostname, 3, 0, 0, 0, 'a', 'b', 'c'}, false, "unterminated field"},
		{"missing field", record(RecMount, "b", "-"), false, "truncated record"},
		{"unknown record", record('?', "x"), false, "unknown record ?"},
		{"hostname in a cache", records(mounts, record(RecHostname, "x")), true, "record h in a cached mount block"},
		{"pause in a cache", records(record(RecMountPause, "1"), mounts), true, "record W in a cached mount block"},
		{"dotdot target in a cache", record(RecMount, "b", "-", "/usr", "/usr/../etc"), true, "not canonical"},
		{"relative source in a cache", record(RecMount, "c", "-", "usr", "/usr"), true, "not canonical"},
		{"trailing slash in a cache", record(RecMount, "t", "-", "", "/tmp/"), true, "not canonical"},
	} {
		err := checkParse(t, c.data, c.onlyMounts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// FuzzParsePlan feeds the C parser (init_plan_linux.c) plans and cached
// mount blocks: it must not crash, and what it accepts it must read as
// the model does, a cached block only with the records and canonical
// paths a cache may hold.
func FuzzParsePlan(f *testing.F) {
	f.Add(samplePlan(), false)
	f.Add(samplePlan(), true)
	f.Add(records(record(RecMount, "b", "-r", "/usr", "/usr"), record(RecLandlock, "7", "1", "0", "0"), record(RecRule, "1", "/usr")), true)
	f.Add([]byte{RecArg, 0, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, data []byte, onlyMounts bool) {
		checkParse(t, data, onlyMounts)
	})
}
