//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOrchestratorExample runs examples/orchestrator/orchestrator.py with
// the corral under test: eight tool calls through the sample skills and
// the example's own, each with --report-fd, --log-fd and an ask channel
// (--ask-fd) the script answers. Each tool result must say what the
// report says (the output; the refused program, file or host and what to
// grant; the time limit; what corral asked and what the orchestrator
// answered), the commands' stderr must hold nothing of corral's, and the
// local server must get requests only for the host the orchestrator
// trusts: a loopback name no rule grants is refused without a question,
// an untrusted host is asked about and denied.
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
	// The sample skills ask for limits, which need a cgroup this user
	// may not get (cgroup v1, or v2 without a delegated scope).
	if r := asSelf.run(t, runOpts{args: []string{"exec", "--memory", "256Mi", "--", "true"}}); r.code == 125 && strings.Contains(r.stderr, "cannot enforce the memory and process limits") {
		t.Skip("this user gets no cgroup here, and the example's skills set limits: " + strings.TrimSpace(r.stderr))
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
	cmd := exec.CommandContext(ctx, python, filepath.Join("..", "examples", "orchestrator", "orchestrator.py"), "--corral", corralBin, "--root", root, "--trust", "api.test", "--json")
	cmd.Env = defaultEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("orchestrator.py: %v\n%s\n%s", err, out, stderr.String())
	}
	type asked struct {
		Question struct {
			ID      string   `json:"id"`
			Kind    string   `json:"kind"`
			Host    string   `json:"host"`
			Command string   `json:"command"`
			Skills  []string `json:"skills"`
		} `json:"question"`
		Answer struct {
			Answer string `json:"answer"`
			By     string `json:"by"`
		} `json:"answer"`
	}
	type toolResult struct {
		ID             string `json:"tool_call_id"`
		OK             bool
		Content        string
		ExitCode       int    `json:"exit_code"`
		Stage          string `json:"stage"`
		Stderr         string `json:"stderr"`
		CorralMessages string `json:"corral_messages"`
		Asked          []asked
		Answered       []struct {
			Answer string `json:"answer"`
			Sent   bool   `json:"sent"`
		}
		ServerRequests *int           `json:"local_server_requests"`
		ServerHosts    map[string]int `json:"local_server_hosts"`
	}
	// What corral asked in each call: "network HOST answer" or "command
	// PROGRAM answer", in any order (call-7's two come at once).
	want := map[string]struct {
		code          int
		stage         string
		ok            bool
		says, corral  string
		commandStderr string
		asked         []string
	}{
		"call-1": {0, "command", true, "one.csv\t3", "", "", []string{"command python3 allow-once"}},
		"call-2": {1, "command", false, `add "$WORK_DIR/notes.txt" to permissions.fs.write`, "", "notes.txt", []string{"command python3 allow-once"}},
		"call-3": {126, "preflight", false, `curl is not in the exec list of skills python-data; to allow it, add "curl" to permissions.exec`, "not permitted", "", nil},
		// Loopback under a name no rule grants: refused, never asked.
		"call-4": {22, "command", false, "network proxy refused GET blocked.test:", "egress proxy refused", "403", []string{"network blocked.test deny"}},
		"call-5": {124, "command", false, "stopped after 1s", "timed out", "", []string{"command python3 allow-once"}},
		"call-6": {0, "command", true, "the local API's answer\ncorral asked may the command reach GET \"api.test:", "", "", []string{"network api.test allow-once"}},
		"call-7": {22, "command", false, "answer: deny (by orchestrator): untrusted.test is not a host the orchestrator trusts", "GET untrusted.test:", "403",
			[]string{"network api.test allow-once", "network untrusted.test deny"}},
		"call-8": {126, "preflight", false, "The orchestrator did not confirm this command line, so it did not run", "answered deny (by orchestrator)", "",
			[]string{"command sh deny"}},
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r toolResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if r.ServerRequests != nil {
			// call-6 and call-7's allowed fetch; nothing for blocked.test
			// (call-4) or untrusted.test (call-7).
			if *r.ServerRequests != 2 || len(r.ServerHosts) != 1 {
				t.Errorf("the local server got %d request(s) %v, want 2, all for api.test", *r.ServerRequests, r.ServerHosts)
			}
			for h := range r.ServerHosts {
				if !strings.HasPrefix(h, "api.test:") {
					t.Errorf("the local server got a request for %q", h)
				}
			}
			continue
		}
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("unexpected tool result %s", line)
			continue
		}
		seen++
		code := r.ExitCode
		if r.ID == "call-7" && code == 0 {
			// curl --parallel exits with the status of the transfer
			// that ends last: the refused one may end first.
			code = w.code
		}
		if code != w.code || r.Stage != w.stage || r.OK != w.ok || !strings.Contains(r.Content, w.says) {
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
		// The report's asked list (what corral did) and the script's own
		// log (what it answered, and that the answer went out).
		var got []string
		for _, a := range r.Asked {
			q := a.Question
			what := q.Host
			if q.Kind == "command" {
				what = strings.Fields(q.Command)[0]
			}
			got = append(got, q.Kind+" "+what+" "+a.Answer.Answer)
			if a.Answer.By != "orchestrator" || q.ID == "" || len(q.Skills) != 1 {
				t.Errorf("%s: asked %+v", r.ID, a)
			}
			if !strings.Contains(r.Content, "corral asked") {
				t.Errorf("%s: the tool result does not say what was asked:\n%s", r.ID, r.Content)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, w.asked) {
			t.Errorf("%s: asked %q, want %q", r.ID, got, w.asked)
		}
		if len(r.Answered) != len(r.Asked) {
			t.Errorf("%s: the orchestrator answered %d questions, the report has %d", r.ID, len(r.Answered), len(r.Asked))
		}
		for _, a := range r.Answered {
			if !a.Sent {
				t.Errorf("%s: an answer did not go out: %+v", r.ID, r.Answered)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d tool results, want %d:\n%s", seen, len(want), out)
	}
}
