//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostProc are /proc files that describe the host (its kernel build,
// symbols, modules, keyrings, memory map, boot) and that no sandboxed
// command needs; README.md lists what stays visible.
var hostProc = []string{
	"config.gz", "kallsyms", "modules", "keys", "key-users", "iomem",
	"sched_debug", "cmdline", "sys/kernel/random/boot_id",
}

// procPaths are ways to name /proc/NAME from inside the sandbox: the
// mount, through the process's own /proc entries, and through PID 1's
// root.
var procPaths = []string{"/proc/%s", "/proc/self/../%s", "/proc/thread-self/../../../%s", "/proc/1/root/proc/%s", "//proc/./%s"}

// TestProcHostFacts reads each host-describing /proc file by every path
// and counts the bytes it gets; the host's own copy must be non-empty for
// the check to mean anything.
func TestProcHostFacts(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "proc", "read the host's kernel config, symbols, keys, memory map and devices from /proc")
		f := newFS(t, u)
		var script strings.Builder
		for _, name := range hostProc {
			for _, p := range procPaths {
				path := fmt.Sprintf(p, name)
				fmt.Fprintf(&script, "echo \"PROC %s $(cat %s 2>/dev/null | wc -c)\"\n", path, path)
			}
		}
		r := runScript(t, u, f.work, nil, script.String())
		got := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			if rest, ok := strings.CutPrefix(l, "PROC "); ok {
				path, n, _ := strings.Cut(rest, " ")
				got[path] = strings.TrimSpace(n)
			}
		}
		checked := 0
		for _, name := range hostProc {
			if data, err := os.ReadFile("/proc/" + name); err != nil || len(data) == 0 {
				continue // not on this kernel (or empty here): nothing to leak
			}
			checked++
			for _, p := range procPaths {
				path := fmt.Sprintf(p, name)
				if n, ok := got[path]; !ok || n != "0" {
					t.Errorf("%s: the sandbox read %s bytes of the host's /proc/%s", path, n, name)
				}
			}
		}
		if checked < 5 {
			t.Fatalf("only %d of the host's /proc files exist here: the test checks too little", checked)
		}
	})
}

// TestProcStillUseful: hiding the host's files keeps what programs read
// (CPU count, memory, load, uptime, their own status and mounts).
func TestProcStillUseful(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "a private /proc the command can read (the landlock tier grants no /proc/self)")
	users(t, func(t *testing.T, u user) {
		f := newFS(t, u)
		keep := []string{"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/uptime", "/proc/version", "/proc/filesystems", "/proc/self/status", "/proc/self/mountinfo"}
		var script strings.Builder
		for _, p := range keep {
			fmt.Fprintf(&script, "echo \"KEEP %s $(cat %s 2>/dev/null | wc -c)\"\n", p, p)
		}
		r := runScript(t, u, f.work, nil, script.String())
		for _, p := range keep {
			if !strings.Contains(r.stdout, "KEEP "+p+" ") || strings.Contains(r.stdout, "KEEP "+p+" 0\n") {
				t.Errorf("%s is not readable in the sandbox any more:\n%s", p, r)
			}
		}
	})
}

// TestProcHiddenDespiteOldCache leaves, in the mount cache, the layout a
// corral before these masks saved: the same mounts without the ones that
// hide /proc's host files. The init builds that root ahead,
// but it is not the plan's, so the run must get the plan's root with
// everything hidden, not resurrect the older one.
func TestProcHiddenDespiteOldCache(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "proc", "bring back a less hidden /proc through an older mount cache")
		f := newCacheFixture(t, u)
		env := mountCacheEnv(t, u)
		file, honest := primeCache(t, u, f.work, f.skills, env, "true")
		header, records := cacheRecords(t, honest)
		old := append([]byte{}, header...)
		dropped := 0
		for _, rec := range records {
			if bytes.Contains(rec, []byte("\x00/proc/")) {
				dropped++
				continue
			}
			old = append(old, rec...)
		}
		if dropped < 5 {
			t.Fatalf("the cache holds %d mounts below /proc, want the masks:\n%q", dropped, honest)
		}
		writeCache(t, u, file, old)
		r := cachedRun(t, u, f.work, f.skills, env, "cat /proc/kallsyms /proc/config.gz /proc/iomem > leaked 2>/dev/null; true")
		if r.ahead != "built" || r.pivot {
			t.Errorf("ahead %q, pivot %v: want the old root built and then dropped", r.ahead, r.pivot)
		}
		if leaked := readFile(t, filepath.Join(f.work, "leaked")); leaked != "" {
			t.Errorf("the sandbox read %d bytes of host /proc files through the old cache", len(leaked))
		}
		if !strings.Contains(r.mounts, "/proc/kallsyms") {
			t.Errorf("the sandbox's mounts have no mask on /proc/kallsyms:\n%s", r.mounts)
		}
	})
}
