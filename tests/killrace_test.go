//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestKillRaceNothingAfterReturn: processes that ignore SIGTERM keep
// writing until the timeout's SIGKILL. Once corral returns, nothing of the
// sandbox may still write: not the git config the sweep just quarantined,
// not any other file. (Killing the shim rather than PID 1 let PID 1 die a
// little later by PR_SET_PDEATHSIG, with the writers still running while
// corral swept.)
func TestKillRaceNothingAfterReturn(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "keep writing a git config past the timeout, racing the sweep")
		work := newDir(t, u, "work")
		marker := filepath.Join(newDir(t, u, "marker"), "ran")
		script := fmt.Sprintf(`mkdir -p s r/.git/objects r/.git/refs/heads w
echo 'ref: refs/heads/main' > r/.git/HEAD
printf '[core]\n\tfsmonitor = "touch %s; false"\n' > s/cfg
trap '' TERM INT
for i in $(seq 16); do
	(trap '' TERM; while :; do cp s/cfg s/t$i; mv s/t$i r/.git/config; echo x >> w/log; done) &
done
wait
`, marker)
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--timeout", "1s", "--kill-grace", "50ms", "--", "sh", "-c", script}, dir: work})
		if r.code != 124 {
			t.Fatalf("exit %d, want 124 (the timeout):\n%s", r.code, r)
		}
		before := treeState(t, work)
		time.Sleep(300 * time.Millisecond)
		if after := treeState(t, work); after != before {
			t.Errorf("the sandbox still wrote after corral returned:\nat return:\n%s\n300 ms later:\n%s", before, after)
		}
		home := newDir(t, u, "home")
		hostGit(t, u, home, filepath.Join(work, "r"), "status")
		if exists(marker) {
			t.Errorf("host git ran the fsmonitor a writer left after the sweep:\n%s", r)
		}
	})
}

// treeState lists every file below dir with its size and modification
// time.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			lines = append(lines, fmt.Sprintf("%s %d %d", strings.TrimPrefix(p, dir), info.Size(), info.ModTime().UnixNano()))
		}
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
