//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOrchestratorExample runs examples/orchestrator/orchestrator.py with
// the corral under test: five tool calls through the sample skills, each
// with --report-fd and --log-fd. Each tool result must say what the
// report says (the output; the refused program, file or host and what to
// grant; the time limit), the commands' stderr must hold nothing of
// corral's, and the local server the refused request named must get none.
func TestOrchestratorExample(t *testing.T) {
	t.Parallel()
	// The example runs corral as an agent runtime would, without --tier:
	// the tier is the host's choice, and the sample skills' exec lists
	// are refused by the landlock tier (125, as it says).
	namespacesOnly(t, "the example's skills have exec lists, which the landlock tier refuses")
	requireSandbox(t)
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3 (the example, and the sample skill's commands)")
	}
	// Not under /tmp, which the sandbox keeps private (the example's
	// --root says why).
	root, err := os.MkdirTemp("/var/tmp", "corral-e2e-orchestrator-")
	if err != nil {
		t.Skipf("no /var/tmp to make the workspace in: %v", err)
	}
	defer os.RemoveAll(root)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("..", "examples", "orchestrator", "orchestrator.py"), "--corral", corralBin, "--root", root, "--json")
	cmd.Env = defaultEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("orchestrator.py: %v\n%s\n%s", err, out, stderr.String())
	}
	type toolResult struct {
		ID             string `json:"tool_call_id"`
		OK             bool
		Content        string
		ExitCode       int    `json:"exit_code"`
		Stage          string `json:"stage"`
		Stderr         string `json:"stderr"`
		CorralMessages string `json:"corral_messages"`
		ServerRequests *int   `json:"local_server_requests"`
	}
	want := map[string]struct {
		code          int
		stage         string
		ok            bool
		says, corral  string
		commandStderr string
	}{
		"call-1": {0, "command", true, "one.csv\t3", "", ""},
		"call-2": {1, "command", false, `add "$WORK_DIR/notes.txt" to permissions.fs.write`, "", "notes.txt"},
		"call-3": {126, "preflight", false, `curl is not in the exec list of skills python-data; to allow it, add "curl" to permissions.exec`, "not permitted", ""},
		"call-4": {22, "command", false, "network proxy refused GET blocked.test:", "egress proxy refused", "403"},
		"call-5": {124, "command", false, "stopped after 1s", "timed out", ""},
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r toolResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if r.ServerRequests != nil {
			if *r.ServerRequests != 0 {
				t.Errorf("the local server got %d request(s) the proxy should have refused", *r.ServerRequests)
			}
			continue
		}
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("unexpected tool result %s", line)
			continue
		}
		seen++
		if r.ExitCode != w.code || r.Stage != w.stage || r.OK != w.ok || !strings.Contains(r.Content, w.says) {
			t.Errorf("%s: exit %d, stage %q, ok %v, content:\n%s\nwant exit %d, stage %q, ok %v, saying %q", r.ID, r.ExitCode, r.Stage, r.OK, r.Content, w.code, w.stage, w.ok, w.says)
		}
		// (A host may add warnings to any run: the landlock tier's notice,
		// limits it cannot enforce.)
		if !strings.Contains(r.CorralMessages, w.corral) {
			t.Errorf("%s: corral's messages %q, want %q", r.ID, r.CorralMessages, w.corral)
		}
		if strings.Contains(r.Stderr, "corral") || !strings.Contains(r.Stderr, w.commandStderr) {
			t.Errorf("%s: the command's stderr is not its own alone (want %q): %q", r.ID, w.commandStderr, r.Stderr)
		}
	}
	if seen != len(want) {
		t.Errorf("%d tool results, want %d:\n%s", seen, len(want), out)
	}
}
