//go:build linux

package corral_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"corral.dev/corral"
)

// TestRunConcurrentSeccomp runs sandboxes at once from one process, half
// with an exec allowlist (whose seccomp program refuses memfd_create) and
// half without: each run must get its own run's program. The runs used to
// share a process-wide prepared program (sandbox.Prepare).
func TestRunConcurrentSeccomp(t *testing.T) {
	if os.Getenv("CORRAL_E2E_TIER") == "landlock" {
		t.Skip("the namespaces tier only: an exec list, which the landlock tier this host gives refuses")
	}
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3 to call memfd_create")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	restricted := filepath.Join(dir, "restricted")
	os.MkdirAll(restricted, 0o755)
	os.WriteFile(filepath.Join(restricted, "SKILL.md"), []byte("---\nname: restricted\ndescription: t\npermissions:\n  exec: [\""+python+"\"]\n---\n"), 0o644)
	script := "import os\ntry:\n    os.memfd_create('x'); print('MEMFD-OK')\nexcept OSError as e:\n    print('MEMFD-REFUSED', e.errno)\n"
	run := func(skillDirs []string) (string, error) {
		skills, err := corral.LoadSkills(skillDirs, corral.Dirs{WorkDir: dir})
		if err != nil {
			return "", err
		}
		var out, errOut strings.Builder
		res, err := corral.Run(context.Background(), corral.Spec{Skills: skills, Argv: []string{python, "-c", script}, Stdout: &out, Stderr: &errOut})
		if err != nil {
			return "", fmt.Errorf("%w: %s", err, errOut.String())
		}
		if res.ExitCode != 0 {
			return "", fmt.Errorf("exit %d: %s", res.ExitCode, errOut.String())
		}
		return strings.TrimSpace(out.String()), nil
	}
	if _, err := run(nil); err != nil {
		t.Skipf("cannot run a sandbox here: %v", err)
	}
	const workers, rounds = 6, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(restrict bool) {
			defer wg.Done()
			var dirs []string
			want := "MEMFD-OK"
			if restrict {
				dirs, want = []string{restricted}, "MEMFD-REFUSED 1"
			}
			for i := 0; i < rounds; i++ {
				got, err := run(dirs)
				if err != nil {
					errs <- err
				} else if got != want {
					errs <- fmt.Errorf("exec allowlist %v: got %q, want %q", restrict, got, want)
				}
			}
		}(w%2 == 0)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
