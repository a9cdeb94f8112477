//go:build linux

package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// productBinary is corral as users get it, without -tags corral_testhooks:
// CORRAL_E2E_PRODUCT_BIN, or built here.
func productBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(baseDir, "bin", "corral-product")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if prebuilt := os.Getenv("CORRAL_E2E_PRODUCT_BIN"); prebuilt != "" {
		data, err := os.ReadFile(prebuilt)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain to build corral without the test hooks, and no CORRAL_E2E_PRODUCT_BIN")
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/corral")
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/corral: %v\n%s", err, b)
	}
	return out
}

// TestProductIgnoresTestKnobs runs corral as users get it with every
// switch the end-to-end tests use set: none may change what it does. A
// product binary that read them would let anyone who sets the
// environment hold the launch open (the pauses, windows in which the host
// can be changed under a run), build the root the older way, or start
// the init late.
func TestProductIgnoresTestKnobs(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "the mount cache's trace step")
	bin := productBinary(t)
	out, err := exec.Command(bin, "version").Output()
	// Just written: a fork elsewhere in this process may still hold the
	// file open for writing until its exec (ETXTBSY).
	for i := 0; i < 20 && err != nil && strings.Contains(err.Error(), "text file busy"); i++ {
		time.Sleep(50 * time.Millisecond)
		out, err = exec.Command(bin, "version").Output()
	}
	if err != nil || strings.Contains(string(out), "test hooks") {
		t.Fatalf("%s version: %q, %v; want a build without the test hooks", bin, out, err)
	}
	env := append(defaultEnv(), "CORRAL_TRACE=1", "CORRAL_MOUNTS=legacy", "CORRAL_EARLY_INIT=0",
		"CORRAL_MOUNT_PAUSE=30s", "CORRAL_PROBE_PAUSE=30s", "CORRAL_HOLD_PAUSE=30s", "CORRAL_CLEANUP_PAUSE=30s")
	users(t, func(t *testing.T, u user) {
		attack(t, "privilege", "hold a product launch open or change how it builds the root through the tests' switches")
		work := newDir(t, u, "work")
		var aheads []string
		saved := false
		for i := 0; i < 2; i++ {
			r := u.run(t, runOpts{bin: bin, args: []string{"exec", "--work-dir", work, "--", "true"}, dir: work, env: env, timeout: 60 * time.Second})
			if r.code != 0 {
				t.Fatalf("run %d: %s", i, r)
			}
			if r.wall > 20*time.Second {
				t.Errorf("run %d took %v: a pause was honoured\n%s", i, r.wall, r)
			}
			if strings.Contains(r.stderr, "mounts legacy") {
				t.Errorf("run %d built the root the older way (CORRAL_MOUNTS=legacy was read)\n%s", i, r)
			}
			m := aheadLine.FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("run %d: the trace has no ahead step\n%s", i, r)
			}
			aheads = append(aheads, m[2])
			if c := cacheLine.FindStringSubmatch(r.stderr); i == 0 && c != nil && c[2] == "true" {
				saved = true
			}
		}
		// The init started early both times: the first run saved the
		// mount cache, the second built from it. CORRAL_EARLY_INIT=0
		// would start it late, which never has a cache. Root always has
		// one (below /run); a user's is in its runtime folder, which
		// this environment does not name, so for a user there is
		// nothing to tell by.
		if !saved && os.Geteuid() == 0 && !u.unpriv {
			t.Fatalf("the first run saved no mount cache (ahead %q): its init started late, so CORRAL_EARLY_INIT=0 was read", aheads[0])
		}
		if !saved {
			t.Logf("the first run saved no mount cache (ahead %q): the early start is not checked for this user", aheads[0])
			return
		}
		if aheads[1] != "built" && !strings.Contains(aheads[1], "another run's") {
			t.Errorf("the second run's init did not build ahead (%q, then %q): CORRAL_EARLY_INIT=0 was read", aheads[0], aheads[1])
		}
		if strings.Contains(aheads[1], "another run's") {
			// A parallel test's run took the same one of the 256 cache
			// slots in between (the CI VM's run of 2026-11-26): the
			// cache was read, so the init did start early.
			t.Logf("the second run found another run's mount cache in its slot (%q): it read the cache, so it started early", aheads[1])
		}
	})
}
