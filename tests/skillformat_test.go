//go:build linux

package tests

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitHelperSkill uses every field of the Agent Skills format, beside
// corral's own permissions; allowed-tools is a string, with entries that
// map and entries that do not.
const gitHelperSkill = `---
name: git-helper
description: Stage changes and commit work in progress. Use when the user asks to save their work.
license: Apache-2.0
compatibility: Requires git
metadata:
  author: example-org
  version: "1.0"
allowed-tools: Bash(git add:*) Bash(git commit -m wip) Read, WebFetch(domain:example.com) Bash(git * main) Bash
permissions:
  fs:
    write: ["$WORK_DIR/**"]
---
Stage with git add, then commit.
`

// testRunnerSkill writes allowed-tools as a YAML list, the format's
// other form.
const testRunnerSkill = `---
name: test-runner
description: Run the project's tests.
allowed-tools:
  - Bash(make test)
  - Grep
---
`

// formatSkills writes git-helper and test-runner into a folder of their
// own, outside the work dir, and returns their folders.
func formatSkills(t *testing.T) (gitHelper, testRunner string) {
	t.Helper()
	dir := newDir(t, asSelf, "skills")
	gitHelper, testRunner = filepath.Join(dir, "git-helper"), filepath.Join(dir, "test-runner")
	writeFile(t, filepath.Join(gitHelper, "SKILL.md"), gitHelperSkill, 0o644)
	writeFile(t, filepath.Join(testRunner, "SKILL.md"), testRunnerSkill, 0o644)
	return gitHelper, testRunner
}

// TestSkillAgentSkillsFormat loads skills using every field of the Agent
// Skills format through the binary: explain shows the fields and what
// each allowed-tools entry became, and check answers by that mapping.
func TestSkillAgentSkillsFormat(t *testing.T) {
	t.Parallel()
	gitHelper, testRunner := formatSkills(t)
	work := newDir(t, asSelf, "work")
	flags := []string{"--global-policy=", "--work-dir", work, "--skill", gitHelper, "--skill", testRunner}

	t.Run("explain", func(t *testing.T) {
		r := asSelf.run(t, runOpts{args: append([]string{"explain"}, flags...)})
		if r.code != 0 {
			t.Fatalf("explain: %s", r)
		}
		for _, want := range []string{"license: Apache-2.0", "compatibility: Requires git", "metadata: author=example-org, version=1.0",
			"no agent policy is in force, so nothing asks"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("explain does not say %q:\n%s", want, r.stdout)
			}
		}
		for _, m := range [][2]string{
			{"Bash(git add:*)", `command rule: "git add", then any arguments`},
			{"Bash(git commit -m wip)", `command rule: exactly "git commit -m wip"`},
			{"Read", "not mapped: corral turns only Bash(...) entries into command rules"},
			{"WebFetch(domain:example.com)", "not mapped: corral turns only Bash(...) entries"},
			{"Bash(git * main)", "not mapped: a '*' inside the command"},
			{"Bash", "not mapped: it pre-approves every command line"},
			{"Bash(make test)", `command rule: exactly "make test"`},
			{"Grep", "not mapped: corral turns only Bash(...) entries"},
		} {
			if !hasMapping(r.stdout, m[0], m[1]) {
				t.Errorf("explain does not show %s -> %s:\n%s", m[0], m[1], r.stdout)
			}
		}
		r = asSelf.run(t, runOpts{args: append([]string{"explain", "--policy-json", `{"version":1}`}, flags...)})
		if !strings.Contains(r.stdout, "allowed where the agent policy would ask") {
			t.Errorf("explain with a policy does not say the pre-approvals are in force:\n%s", r)
		}
	})

	t.Run("explain --json", func(t *testing.T) {
		r := asSelf.run(t, runOpts{args: append([]string{"explain", "--json"}, flags...)})
		var x struct {
			Skills []struct {
				Name, License, Compatibility string
				Metadata                     map[string]string
				AllowedTools                 []struct {
					Entry, Tool, Mapping string
					NotMapped            string `json:"not_mapped"`
					Command              *struct {
						Words  []string
						Prefix bool
					}
				} `json:"allowed_tools"`
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &x); err != nil || r.code != 0 || len(x.Skills) != 2 {
			t.Fatalf("explain --json: %v\n%s", err, r)
		}
		s := x.Skills[0]
		if s.Name != "git-helper" || s.License != "Apache-2.0" || s.Compatibility != "Requires git" || s.Metadata["version"] != "1.0" || len(s.AllowedTools) != 6 {
			t.Fatalf("git-helper: %+v", s)
		}
		add, read := s.AllowedTools[0], s.AllowedTools[2]
		if add.Entry != "Bash(git add:*)" || add.Tool != "Bash" || add.Command == nil || strings.Join(add.Command.Words, " ") != "git add" || !add.Command.Prefix || add.NotMapped != "" {
			t.Errorf("Bash(git add:*) = %+v", add)
		}
		if read.Entry != "Read" || read.Command != nil || read.NotMapped == "" || !strings.HasPrefix(read.Mapping, "not mapped: ") {
			t.Errorf("Read = %+v", read)
		}
		if tr := x.Skills[1].AllowedTools; len(tr) != 2 || tr[0].Entry != "Bash(make test)" || tr[0].Command == nil || tr[0].Command.Prefix {
			t.Errorf("test-runner's list: %+v", tr)
		}
	})

	t.Run("check", func(t *testing.T) {
		const ask = `{"version":1}` // a policy that asks about every command no rule allows
		for _, tt := range []struct {
			policy, kind, arg string
			wantCode          int
			layer, says       string
		}{
			{ask, "exec", "git add -A", 0, "skill git-helper", "allowed-tools Bash(git add:*) of skill git-helper"},
			{ask, "tool", "bash git add src", 0, "skill git-helper", "allowed-tools Bash(git add:*)"},
			{ask, "exec", "git commit -m wip", 0, "skill git-helper", "allowed-tools Bash(git commit -m wip)"},
			{ask, "exec", "make test", 0, "skill test-runner", "allowed-tools Bash(make test) of skill test-runner"},
			{ask, "exec", "git add -A && git commit -m wip 2>&1", 0, "skill git-helper", ""},
			// Nothing wider than the entries.
			{ask, "exec", "git push origin main", 2, "", `no rule allows "git push origin main"`},
			{ask, "exec", "git add -A && git push", 2, "", `"git push"`},
			{ask, "exec", "git commit -m wip --amend", 2, "", ""},
			{ask, "exec", "git -C . add -A", 2, "", ""},
			{ask, "exec", "git -c core.hooksPath=/tmp add -A", 2, "", ""},
			{ask, "exec", "/usr/bin/git add -A", 2, "", ""},
			{ask, "exec", "'git add' -A", 2, "", ""},
			{ask, "exec", "GIT_DIR=/tmp/x git add -A", 2, "", ""},
			{ask, "exec", "git add -A > staged.txt", 2, "", ""},
			{ask, "exec", "git merge main", 2, "", ""}, // Bash(git * main) does not map
			{ask, "exec", "rm -rf src", 2, "", ""},     // nor does Bash
			{ask, "exec", "make install", 2, "", ""},
			// A deny rule still wins; without a policy nothing asks.
			{`{"permissions":{"deny":[{"command":"git add"}]}}`, "exec", "git add -A", 1, "invocation (--policy-json)", "denied"},
			{"", "exec", "git push origin main", 0, "", ""},
		} {
			args := append([]string{"check"}, flags...)
			if tt.policy != "" {
				args = append(args, "--policy-json", tt.policy)
			}
			if tt.kind == "tool" {
				name, command, _ := strings.Cut(tt.arg, " ")
				args = append(args, "tool", name, command)
			} else {
				args = append(args, tt.kind, tt.arg)
			}
			r := asSelf.run(t, runOpts{args: args})
			var d struct{ Action, Reason, Layer string }
			if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
				t.Errorf("check %s %q: not one JSON decision: %v\n%s", tt.kind, tt.arg, err, r)
				continue
			}
			if r.code != tt.wantCode || d.Layer != tt.layer || !strings.Contains(d.Reason, tt.says) {
				t.Errorf("check %s %q with policy %q = exit %d %+v, want exit %d, layer %q, saying %q", tt.kind, tt.arg, tt.policy, r.code, d, tt.wantCode, tt.layer, tt.says)
			}
		}
	})
}

// hasMapping reports whether explain's text has a line with entry, then
// "-> mapping".
func hasMapping(out, entry, mapping string) bool {
	for _, line := range strings.Split(out, "\n") {
		head, tail, ok := strings.Cut(line, " -> ")
		if ok && strings.TrimSpace(head) == entry && strings.HasPrefix(tail, mapping) {
			return true
		}
	}
	return false
}

// TestSkillFormatErrors: a skill that breaks a rule of the format is one
// line on stderr naming the file, the field and the rule, and exit 125.
func TestSkillFormatErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ folder, frontmatter, want string }{
		{"Bad_Name", "name: Bad_Name\ndescription: d\n", `name: "Bad_Name" breaks the Agent Skills name rule: only lower-case letters a-z, digits and '-'`},
		{"pdf--tools", "name: pdf--tools\ndescription: d\n", `breaks the Agent Skills name rule: no '--'`},
		{"skill", "name: git-helper\ndescription: d\n", `name: "git-helper" breaks the Agent Skills name rule: it must match the name of the folder holding SKILL.md, "skill"`},
		{"no-desc", "name: no-desc\n", "description: missing"},
		{"meta", "name: meta\ndescription: d\nmetadata: {version: 1.0}\n", `metadata.version: must be a string, not float "1.0"`},
		{"tools", "name: tools\ndescription: d\nallowed-tools: Bash(git add\n", `allowed-tools: "Bash(git add" has a '(' that is not closed`},
		{"unknown", "name: unknown\ndescription: d\nversion: '1'\n", "version: unknown field"},
	} {
		dir := filepath.Join(newDir(t, asSelf, "skills"), tt.folder)
		writeFile(t, filepath.Join(dir, "SKILL.md"), "---\n"+tt.frontmatter+"---\n", 0o644)
		r := asSelf.run(t, runOpts{args: []string{"explain", "--global-policy=", "--skill", dir}})
		msg := strings.TrimSpace(r.stderr)
		if r.code != 125 || !strings.Contains(msg, tt.want) || !strings.Contains(msg, filepath.Join(dir, "SKILL.md")) || strings.Contains(msg, "\n") {
			t.Errorf("%s: exit %d, stderr %q; want 125 and one line naming the file and %q", tt.folder, r.code, r.stderr, tt.want)
		}
	}
}

// TestSkillPreapprovalExec: a pre-approved command runs under a policy
// that would ask without --confirmed, and a skill's exec list still
// decides what runs: a pre-approval is no exec grant.
func TestSkillPreapprovalExec(t *testing.T) {
	t.Parallel()
	namespacesOnly(t, "an exec list, which the landlock tier refuses")
	requireSandbox(t)
	gitHelper, testRunner := formatSkills(t)
	// git-helper may run git only.
	writeFile(t, filepath.Join(gitHelper, "SKILL.md"), strings.Replace(gitHelperSkill, "permissions:\n", "permissions:\n  exec: [git]\n", 1), 0o644)
	work := newDir(t, asSelf, "work")
	writeFile(t, filepath.Join(work, "a.txt"), "a\n", 0o644)
	if out, err := exec.Command("git", "init", "-q", work).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	flags := []string{"--global-policy=", "--work-dir", work, "--skill", gitHelper, "--skill", testRunner, "--policy-json", `{"version":1}`}

	r := asSelf.run(t, runOpts{args: append(append([]string{"check"}, flags...), "exec", "make test"), dir: work})
	if r.code != 1 || !strings.Contains(r.stdout, "make is not in the exec list") {
		t.Errorf("check exec 'make test', pre-approved but outside git-helper's exec list: want deny\n%s", r)
	}
	r = asSelf.run(t, runOpts{args: append(append([]string{"exec"}, flags...), "--", "git", "push"), dir: work})
	if r.code != 126 {
		t.Errorf("exec git push under a policy that asks, without --confirmed: want 126\n%s", r)
	}
	r = asSelf.run(t, runOpts{args: append(append([]string{"exec"}, flags...), "--", "git", "add", "a.txt"), dir: work})
	if r.code != 0 {
		t.Fatalf("exec git add a.txt, pre-approved by git-helper: %s", r)
	}
	out, err := exec.Command("git", "-C", work, "ls-files", "--cached").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "a.txt" {
		t.Errorf("git add did not stage a.txt: %v %q", err, out)
	}
}

// TestSkillPreapprovalNoWildcards: a skill's pre-approvals cannot turn an
// agent policy's deny into allow through a program that runs another
// one: a wrapper, an interpreter's code option, a whole program that runs
// commands through an option (git -c alias), or a runner whose options
// corral does not read (strace, unshare), which the policy's own rules
// cannot see through either.
func TestSkillPreapprovalNoWildcards(t *testing.T) {
	t.Parallel()
	attack(t, "policy", "pass a policy's deny of rm through a skill's pre-approval of unshare, git, python3 -c, timeout")
	dir := newDir(t, asSelf, "skills")
	sk := filepath.Join(dir, "runner")
	writeFile(t, filepath.Join(sk, "SKILL.md"), `---
name: runner
description: runs things
allowed-tools: Bash(unshare:*) Bash(strace:*) Bash(git:*) Bash(python3 -c:*) Bash(timeout 5:*) Bash(env:*)
---
`, 0o644)
	work := newDir(t, asSelf, "work")
	policy := `{"version":1,"permissions":{"deny":[{"command":"rm"}]}}`
	for _, line := range []string{"unshare rm -f victim", "strace -f rm victim", "git -c alias.x=!rm x", "python3 -c print", "timeout 5 rm victim", "env rm victim", "rm victim"} {
		r := asSelf.run(t, runOpts{args: []string{"check", "--work-dir", work, "--policy-json", policy, "--skill", sk, "tool", "bash", line}, dir: work})
		if r.code == 0 || strings.Contains(r.stdout, `"allow"`) {
			t.Errorf("%q with a deny of rm and the skill's pre-approvals: exit %d, want no allow:\n%s", line, r.code, r)
		}
	}
	r := asSelf.run(t, runOpts{args: []string{"explain", "--work-dir", work, "--skill", sk}, dir: work})
	for _, entry := range []string{"Bash(unshare:*)", "Bash(git:*)", "Bash(python3 -c:*)", "Bash(timeout 5:*)", "Bash(env:*)"} {
		if !hasMapping(r.stdout, entry, "not mapped") {
			t.Errorf("explain does not show %s as not mapped:\n%s", entry, r.stdout)
		}
	}
}
