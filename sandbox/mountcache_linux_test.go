package sandbox

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
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
	p.Held = []HeldFile{{Path: "/w/.bashrc", Major: 8, Minor: 1, Ino: 42}}
	data, block := encodePlan(p)
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
// replaces what the init would not read.
func TestSaveMountCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mounts")
	file := filepath.Join(dir, "2a")
	block := []byte("m\x03\x00\x00\x00a\x00b")
	if err := saveMountCache(file, 42, block); err != nil {
		t.Fatal(err)
	}
	want := append(binary.LittleEndian.AppendUint64([]byte(mountCacheMagic), 42), block...)
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("saved %q (%v), want %q", got, err, want)
	}
	st, _ := os.Stat(dir)
	fst, _ := os.Stat(file)
	if st.Mode().Perm() != 0o700 || fst.Mode().Perm() != 0o600 {
		t.Errorf("folder %v, file %v: want 0700 and 0600", st.Mode().Perm(), fst.Mode().Perm())
	}
	before, _ := os.Stat(file)
	if err := saveMountCache(file, 42, block); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(file); !os.SameFile(before, after) {
		t.Errorf("an unchanged cache was written again")
	}
	os.Chmod(file, 0o622)
	if err := saveMountCache(file, 42, block); err != nil {
		t.Fatal(err)
	}
	if fst, _ := os.Stat(file); fst.Mode().Perm() != 0o600 {
		t.Errorf("a cache others can write was kept (%v)", fst.Mode().Perm())
	}
	os.Chmod(dir, 0o777)
	if err := saveMountCache(file, 43, block); err == nil {
		t.Errorf("saved into a folder everybody can write")
	}
}
