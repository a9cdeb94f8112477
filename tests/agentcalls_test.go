//go:build linux

package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// agentFixture is the work dir every call of testdata/agentcalls starts
// from: a small git repository with Python, Node and Go code and a
// Makefile, as a coding agent's project has.
var agentFixture = map[string]string{
	"README.md":          "# demo\n\nA small project.\n",
	"notes.txt":          "first line\nsecond line\nthird line\nfirst line\n",
	"env.sh":             "export ENV_FOO=from-env-sh\nenv_func() { echo env-func; }\n",
	"src/app.py":         "# TODO: more\ndef add(a, b):\n    return a + b\n\nif __name__ == '__main__':\n    print(add(2, 3))\n",
	"tests/__init__.py":  "",
	"tests/test_app.py":  "import sys, unittest\nsys.path.insert(0, 'src')\nimport app\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(app.add(1, 2), 3)\n",
	"package.json":       `{"name": "demo", "version": "1.0.0", "scripts": {"test": "node test.js", "hello": "echo hello-from-npm"}}` + "\n",
	"test.js":            "const assert = require('assert');\nassert.strictEqual(1 + 1, 2);\nconsole.log('node ok');\n",
	"go.mod":             "module demo\n\ngo 1.21\n",
	"main.go":            "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n",
	"main_test.go":       "package main\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
	"Makefile":           "build:\n\tmkdir -p bin\n\tprintf '#!/bin/sh\\necho app\\n' > bin/app\n\tchmod +x bin/app\n\ntest: build\n\t./bin/app\n\nclean:\n\trm -rf bin\n\n.PHONY: build test clean\n",
	"docs/guide.md":      "guide\n",
	"src/lib/helpers.py": "# TODO: helpers\n",
}

// needsPrefix is a call's "[prog] " prefix (not bash's [[ or [).
var needsPrefix = regexp.MustCompile(`^\[([a-z0-9]+)\] `)

// agentCall is one line of testdata/agentcalls/calls.txt.
type agentCall struct {
	line  string
	needs string // a program that must be on the sandbox's PATH
}

func readAgentCalls(t *testing.T) []agentCall {
	t.Helper()
	data, err := os.ReadFile("testdata/agentcalls/calls.txt")
	if err != nil {
		t.Fatal(err)
	}
	var calls []agentCall
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := agentCall{line: strings.ReplaceAll(l, " ↵ ", "\n")}
		if m := needsPrefix.FindStringSubmatch(c.line); m != nil {
			c.needs, c.line = m[1], c.line[len(m[0]):]
		}
		calls = append(calls, c)
	}
	return calls
}

// makeAgentFixture writes the fixture into dir and commits it, with fixed
// names and dates so that every copy is the same repository.
func makeAgentFixture(t *testing.T, dir string) {
	t.Helper()
	for name, content := range agentFixture {
		writeFile(t, filepath.Join(dir, name), content, 0o644)
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-c", "user.name=Fixture", "-c", "user.email=fixture@example.test", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "initial")
}

// TestAgentCallsRunUnchanged runs a corpus of ordinary agent tool calls
// (git, make, python, node, bash idioms, heredocs, temporary files,
// source, background jobs) as `bash -c LINE` and `bash -lc LINE`, plainly
// and under a skill that grants the work dir and sets no exec list, and
// wants the same exit code, output and files: nothing in the preflight's
// reading of a line may refuse it (issue 28).
func TestAgentCallsRunUnchanged(t *testing.T) {
	calls := readAgentCalls(t)
	if len(calls) < 150 {
		t.Fatalf("the corpus has %d calls, want at least 150", len(calls))
	}
	users(t, func(t *testing.T, u user) {
		skills := newDir(t, u, "skills")
		skill := writeSkill(t, skills, "agent-work", "  fs:\n    read: [\"$WORK_DIR/**\"]\n    write: [\"$WORK_DIR/**\"]\n")
		template := newDir(t, u, "template")
		makeAgentFixture(t, template)
		own(t, u, template)
		for _, shell := range []string{"-c", "-lc"} {
			t.Run("bash"+shell, func(t *testing.T) {
				var mismatches, ran int
				for _, c := range calls {
					if c.needs != "" && sandboxProgram(c.needs) == "" {
						continue
					}
					ran++
					if msg := compareAgentCall(t, u, template, skill, shell, c.line); msg != "" {
						mismatches++
						t.Errorf("bash %s %q: %s", shell, c.line, msg)
					}
				}
				t.Logf("%d calls ran (the others need a program the sandbox's PATH lacks), %d differed", ran, mismatches)
			})
		}
	})
}

// sandboxProgram is prog's path in the sandbox's PATH folders, or "".
func sandboxProgram(prog string) string {
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		if st, err := os.Stat(filepath.Join(d, prog)); err == nil && st.Mode()&0o111 != 0 {
			return filepath.Join(d, prog)
		}
	}
	return ""
}

// compareAgentCall runs line plainly and under corral, each in a fresh
// copy of template at the same path, and says how they differ ("" when
// they do not).
func compareAgentCall(t *testing.T, u user, template, skill, shell, line string) string {
	t.Helper()
	work := filepath.Join(filepath.Dir(template), "work-"+filepath.Base(template))
	fresh := func() {
		os.RemoveAll(work)
		if out, err := exec.Command("cp", "-a", template, work).CombinedOutput(); err != nil {
			t.Fatalf("copying the fixture: %v\n%s", err, out)
		}
	}
	defer os.RemoveAll(work)

	fresh()
	home := filepath.Join(filepath.Dir(template), "home-"+filepath.Base(template))
	os.RemoveAll(home)
	os.Mkdir(home, 0o755)
	own(t, u, home)
	defer os.RemoveAll(home)
	plain := runPlain(t, u, work, home, "bash", shell, line)
	plainTree := treeDigest(work)

	fresh()
	r := u.run(t, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--skill", skill, "--", "bash", shell, line}, dir: work, timeout: 60 * time.Second})
	sandTree := treeDigest(work)

	var diffs []string
	if r.code != plain.code {
		diffs = append(diffs, fmt.Sprintf("exit %d under corral, %d plainly", r.code, plain.code))
	}
	if a, b := normalOutput(r.stdout, work), normalOutput(plain.stdout, work); a != b {
		diffs = append(diffs, fmt.Sprintf("stdout %q under corral, %q plainly", a, b))
	}
	if !slices.Equal(sandTree, plainTree) {
		diffs = append(diffs, fmt.Sprintf("files differ: under corral %v, plainly %v", onlyIn(sandTree, plainTree), onlyIn(plainTree, sandTree)))
	}
	if len(diffs) > 0 {
		return strings.Join(diffs, "; ") + "\ncorral's stderr: " + r.stderr + "\nplain stderr: " + plain.stderr
	}
	return ""
}

// runPlain runs argv in work as u, with the environment a sandboxed
// command gets (the sandbox's PATH, a home of its own).
func runPlain(t *testing.T, u user, work, home string, argv ...string) result {
	t.Helper()
	if u.unpriv {
		argv = append([]string{setpriv, "--reuid", fmt.Sprint(nobody), "--regid", fmt.Sprint(nobody), "--clear-groups"}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", "LANG=C.UTF-8", "HOME=" + home, "TMPDIR=" + home}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %q plainly: %v", argv, err)
	}
	return r
}

var hexRun = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// normalOutput is out with the work dir's path and hashes (git's commit
// ids, which hold the time) replaced.
func normalOutput(out, work string) string {
	out = strings.ReplaceAll(out, work, "$WORK")
	return hexRun.ReplaceAllString(out, "HASH")
}

// treeDigest lists the work dir's files and folders with their kind,
// executable bit and content hash, leaving out what holds times or the
// path (git's own folder, Python's bytecode and venvs, archives).
func treeDigest(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		switch d.Name() {
		case ".git", "__pycache__", ".venv":
			out = append(out, rel+"/")
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		entry := rel
		switch {
		case d.IsDir():
			entry += "/"
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			entry += " -> " + target
		case info.Mode().IsRegular():
			if info.Mode()&0o100 != 0 {
				entry += " (x)"
			}
			if ext := filepath.Ext(p); ext != ".gz" && ext != ".tgz" && ext != ".tar" {
				data, _ := os.ReadFile(p)
				sum := sha256.Sum256(data)
				entry += " " + hex.EncodeToString(sum[:6])
			}
		}
		out = append(out, entry)
		return nil
	})
	return out
}

// onlyIn are the entries of a that b lacks.
func onlyIn(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
