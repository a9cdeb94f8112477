//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNoNetworkLookupSaysWhy: without network.allow a lookup fails at
// once with "no such name" (a resolver that never answers made npm wait
// 71 s), and stderr and the report name the names and the grant that
// would let them out. Package managers are told not to retry (issue 28,
// item 4).
func TestNoNetworkLookupSaysWhy(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		report := filepath.Join(newDir(t, u, "report"), "r.json")
		script := `getent hosts registry.example.test; echo "getent=$?"; echo "npm=$npm_config_fetch_retries pip=$PIP_RETRIES"`
		start := time.Now()
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--report", report, "--", "sh", "-c", script}, dir: work})
		took := time.Since(start)
		if !strings.Contains(r.stdout, "getent=2\n") || !strings.Contains(r.stdout, "npm=0 pip=0") || took > 10*time.Second {
			t.Errorf("a lookup without network: %v (want a quick \"not found\", exit 2), retries off:\n%s", took, r)
		}
		if e2eTier == "landlock" {
			return // no resolver of its own to answer: the host's refuses the socket
		}
		want := `network: {allow: ["registry.example.test:443"]}`
		if !strings.Contains(r.stderr, "no skill grants network") || !strings.Contains(r.stderr, want) {
			t.Errorf("stderr should name the name and the grant %s:\n%s", want, r)
		}
		var rep struct{ Warnings []string }
		data, _ := os.ReadFile(report)
		json.Unmarshal(data, &rep)
		if !strings.Contains(strings.Join(rep.Warnings, "\n"), want) {
			t.Errorf("the report's warnings lack the lookup: %q", rep.Warnings)
		}
	})
}

// TestLoopbackPresetPlainClient: a preset:loopback:PORT grant is reached by
// a plain client of http://127.0.0.1:PORT/, which NO_PROXY sends direct:
// in the namespaces tier the supervisor takes such a connect to the proxy,
// in the landlock tier loopback is no exception to HTTP_PROXY. Another
// loopback port stays unreachable.
func TestLoopbackPresetPlainClient(t *testing.T) {
	t.Parallel()
	attack(t, "network", "reach a host loopback port the preset does not name")
	port, oport := serveText(t, "loopback-served"), serveText(t, "OTHER-SERVED")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		sk := writeSkill(t, newDir(t, u, "skills"), "local-api", fmt.Sprintf("  network:\n    allow: [\"preset:loopback:%d\"]\n", port))
		script := fmt.Sprintf(`curl -sS --max-time 10 http://127.0.0.1:%[1]d/; echo; curl -sS --max-time 10 http://localhost:%[1]d/; echo
curl -sS --max-time 10 http://127.0.0.1:%[2]d/ 2>&1; echo`, port, oport)
		r := u.run(t, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--skill", sk, "--", "sh", "-c", script}, dir: work})
		if strings.Count(r.stdout, "loopback-served") != 2 {
			t.Errorf("plain curl of the granted loopback port:\n%s", r)
		}
		if strings.Contains(r.stdout, "OTHER-SERVED") {
			t.Errorf("a loopback port no grant names was reached:\n%s", r)
		}
	})
}

// TestProtectedGitConfigSaysWhy: `git config` on a repository's config,
// which the namespaces tier keeps read-only, fails as git says ("Device or
// resource busy"), and corral says that it keeps the file read-only.
func TestProtectedGitConfigSaysWhy(t *testing.T) {
	t.Parallel()
	if e2eTier == "landlock" {
		t.Skip("namespaces tier only: the landlock tier binds nothing read-only (its sweep checks the config after the run)")
	}
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		if r := u.run(t, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--", "git", "init", "-q", "."}, dir: work}); r.code != 0 {
			t.Fatalf("git init:\n%s", r)
		}
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--", "sh", "-c", "git config core.fsmonitor 'echo x'; echo rc=$?"}, dir: work})
		if !strings.Contains(r.stdout, "rc=") || strings.Contains(r.stdout, "rc=0") {
			t.Fatalf("git config on the protected config should fail:\n%s", r)
		}
		if !strings.Contains(r.stderr, filepath.Join(work, ".git", "config")) || !strings.Contains(r.stderr, "corral keeps it read-only") {
			t.Errorf("stderr should say corral keeps .git/config read-only:\n%s", r)
		}
	})
}

// serveText serves body over HTTP on a port of 127.0.0.1 until the test
// ends, and returns the port.
func serveText(t *testing.T, body string) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}
