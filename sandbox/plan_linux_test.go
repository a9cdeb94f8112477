package sandbox

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// records splits an encoded plan into its records.
func records(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for rest := data; len(rest) > 0; {
		if len(rest) < 5 {
			t.Fatalf("truncated record header")
		}
		n := 5 + int(binary.LittleEndian.Uint32(rest[1:5]))
		out, rest = append(out, rest[:n]), rest[n:]
	}
	return out
}

// TestEncodePlanMountBlock checks that the mount block encodePlan returns
// is every record the init's mounts come from, and only those, together:
// the init compares it with the cached block to decide whether the root it
// built ahead is the plan's.
func TestEncodePlanMountBlock(t *testing.T) {
	p := &Plan{
		Hostname: "corral", Dir: "/w", Path: "/bin/true", Argv: []string{"true"}, Env: []string{"PATH=/bin"},
		Mounts: []Mount{
			{Kind: MountTmpfs, Target: "/tmp"},
			{Kind: MountBind, Source: "/usr", Target: "/usr", ReadOnly: true, Dir: true},
			{Kind: MountBind, Source: "/w", Target: "/w", NoExec: true, Dir: true},
		},
		LegacyMounts: true,
		MountPause:   time.Millisecond,
		Trace:        true,
	}
	p.Landlock.ABI = 7
	p.Landlock.Rules = []PathRule{{Access: 1, Path: "/w"}}
	held := []HeldFile{{Path: "/w/.bashrc", Major: 8, Minor: 1, Ino: 42}}
	data, block := encodePlan(p, held)
	if got := int(binary.LittleEndian.Uint32(data)); got != len(data)-4 {
		t.Fatalf("length %d, want %d", got, len(data)-4)
	}
	var want []byte
	first, last := -1, -1
	for i, r := range records(t, data[4:]) {
		switch r[0] {
		case 'M', 'W', 'm', 'l', 'r', 'n':
			want = append(want, r...)
			if first < 0 {
				first = i
			}
			if last >= 0 && last != i-1 {
				t.Errorf("record %d (%c) is apart from the mount block", i, r[0])
			}
			last = i
		}
	}
	if !bytes.Equal(block, want) {
		t.Errorf("mount block:\n%q\nwant every M, W, m, l, r and n record:\n%q", block, want)
	}
	if n := len(records(t, block)); n != 7 {
		t.Errorf("the block holds %d records, want 7 (M, W, three mounts, the Landlock header and a rule)", n)
	}
	// The block must not alias the plan past its end: appending to it
	// must not change the plan.
	before := append([]byte{}, data...)
	_ = append(block, 'x')
	if !bytes.Equal(data, before) {
		t.Errorf("appending to the block changed the plan")
	}
}

// TestSaveMountCache writes a cache, leaves a same one alone, and
