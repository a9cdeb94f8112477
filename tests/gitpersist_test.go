//go:build linux

package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitAttack is one way to leave git something to run on the host: the
// script runs in the sandbox with the work dir writable ($M is the marker
// file the planted command would create), then the host's git runs each
// of host in the work dir's sub-folder dir.
type gitAttack struct {
	name   string
	setup  func(t *testing.T, work string) // on the host, before the run
	script string
	dir    string
	host   [][]string
}

// sandboxGit is git inside the sandbox with an identity for commits.
const sandboxGit = "git -c user.name=a -c user.email=a@example.invalid"

var gitAttacks = []gitAttack{
	{name: "core.fsmonitor in a new repository", script: `
git init -q r && git -C r config core.fsmonitor "touch $M"`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "core.fsmonitor in a repository 7 folders deep", script: `
mkdir -p a/b/c/d/e/f/g && git init -q a/b/c/d/e/f/g/r
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s"\n' "$M" >> a/b/c/d/e/f/g/r/.git/config`,
		dir: "a/b/c/d/e/f/g/r", host: [][]string{{"status"}}},
	{name: "core.hooksPath to a folder of the work tree", script: `
git init -q r && mkdir r/hk && printf '#!/bin/sh\ntouch %s\n' "$M" > r/hk/pre-commit && chmod +x r/hk/pre-commit
git -C r config core.hooksPath hk`,
		dir: "r", host: [][]string{{"-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "--allow-empty", "-m", "x"}}},
	{name: "alias with ! run by name", script: `
git init -q r && git -C r config alias.st "!touch $M"`,
		dir: "r", host: [][]string{{"st"}}},
	{name: "alias on the section header's line", script: `
git init -q r && printf '[alias] st = "!touch %s"\n' "$M" >> r/.git/config`,
		dir: "r", host: [][]string{{"st"}}},
	{name: "filter driver and .gitattributes", script: `
git init -q r && echo '* filter=ev' > r/.gitattributes && echo data > r/f
git -C r config filter.ev.clean "touch $M; cat"`,
		dir: "r", host: [][]string{{"add", "f"}, {"status"}}},
	{name: "include.path to a config file the command wrote", script: `
git init -q r && printf '[core]\n\tfsmonitor = "touch %s"\n' "$M" > r/inc.cfg
git -C r config include.path ../inc.cfg`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "includeIf to a config file the command wrote", script: `
git init -q r && printf '[core]\n\tfsmonitor = "touch %s"\n' "$M" > r/inc.cfg
printf '[includeIf "gitdir:/"]\n\tpath = ../inc.cfg\n' >> r/.git/config`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "file the user's config includes, rewritten", setup: func(t *testing.T, work string) {
		hostGitSetup(t, filepath.Join(work, "a/b/c/r"), "init", "-q")
		hostGitSetup(t, filepath.Join(work, "a/b/c/r"), "config", "include.path", "../extra.cfg")
		writeFile(t, filepath.Join(work, "a/b/c/r/extra.cfg"), "[user]\n\tname = me\n", 0o644)
	}, script: `
printf '[core]\n\tfsmonitor = "touch %s"\n' "$M" > a/b/c/r/extra.cfg`,
		dir: "a/b/c/r", host: [][]string{{"status"}}},
	{name: "pre-commit hook in a new repository", script: `
git init -q r && printf '#!/bin/sh\ntouch %s\n' "$M" > r/.git/hooks/pre-commit && chmod +x r/.git/hooks/pre-commit`,
		dir: "r", host: [][]string{{"-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "--allow-empty", "-m", "x"}}},
	{name: "bare-shaped folder made by hand", script: `
mkdir -p b/objects b/refs && echo 'ref: refs/heads/main' > b/HEAD
printf '[core]\n\tbare = true\n[alias]\n\tst = "!touch %s"\n' "$M" > b/config`,
		dir: "b", host: [][]string{{"st"}}},
	{name: ".git file pointing to a git folder elsewhere in the work dir", script: `
mkdir store && git init -q --separate-git-dir store/x w && git -C w config core.fsmonitor "touch $M"`,
		dir: "w", host: [][]string{{"status"}}},
	{name: "gitlink in the parent's index to a nested repository with core.fsmonitor", setup: func(t *testing.T, work string) {
		hostGitSetup(t, work, "init", "-q")
	}, script: `
git init -q sub && ` + sandboxGit + ` -C sub commit -q --allow-empty -m x
git update-index --add --cacheinfo "160000,$(git -C sub rev-parse HEAD),sub"
git -C sub config core.fsmonitor "touch $M"`,
		dir: ".", host: [][]string{{"status"}, {"diff"}}},
	{name: "existing repository deeper than the launch search, config edited", setup: func(t *testing.T, work string) {
		hostGitSetup(t, filepath.Join(work, "p/q/s/r"), "init", "-q")
	}, script: `
printf '[core]\n\tfsmonitor = "touch %s"\n' "$M" >> p/q/s/r/.git/config`,
		dir: "p/q/s/r", host: [][]string{{"status"}}},
	{name: "existing deep repository, hook added", setup: func(t *testing.T, work string) {
		hostGitSetup(t, filepath.Join(work, "p/q/s/r"), "init", "-q")
	}, script: `
printf '#!/bin/sh\ntouch %s\n' "$M" > p/q/s/r/.git/hooks/pre-commit && chmod +x p/q/s/r/.git/hooks/pre-commit`,
		dir: "p/q/s/r", host: [][]string{{"-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "--allow-empty", "-m", "x"}}},
	{name: "repository 300 folders deep", script: `
d=.; for i in $(seq 300); do d=$d/d; done; mkdir -p $d && git init -q $d/r && git -C $d/r config core.fsmonitor "touch $M"`,
		dir: strings.Repeat("d/", 300) + "r", host: [][]string{{"status"}}},
	{name: "repository hidden in a folder made unreadable", script: `
mkdir hide && git init -q hide/r && git -C hide/r config core.fsmonitor "touch $M" && chmod 000 hide`,
		dir: "hide/r", host: [][]string{{"status"}}},
	{name: "git folder and hooks folder made read-only", script: `
git init -q r && git -C r config core.fsmonitor "touch $M" && chmod 555 r/.git
git init -q h && printf '#!/bin/sh\ntouch %s\n' "$M" > h/.git/hooks/pre-commit && chmod 755 h/.git/hooks/pre-commit && chmod 555 h/.git/hooks`,
		dir: "r", host: [][]string{{"status"}, {"-C", "../h", "-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "--allow-empty", "-m", "x"}}},
	{name: "work dir itself made unreadable", script: `
git init -q r && git -C r config core.fsmonitor "touch $M" && chmod 000 .`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "repository hidden in the objects folder of a decoy holding HEAD", script: `
mkdir -p proj/objects/src proj/refs && echo 'ref: refs/heads/main' > proj/HEAD
git init -q proj/objects/src/r && git -C proj/objects/src/r config core.fsmonitor "touch $M"`,
		dir: "proj/objects/src/r", host: [][]string{{"status"}}},
	{name: "old folder renamed into place as .git", setup: func(t *testing.T, work string) {
		// As an earlier run could have left it: not a repository then.
		writeFile(t, filepath.Join(work, "stash/config"), "[core]\n\tfsmonitor = \"touch "+markerVar+"\"\n", 0o644)
	}, script: `
mkdir r && mv stash r/.git && mkdir r/.git/objects r/.git/refs && echo 'ref: refs/heads/main' > r/.git/HEAD`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "core.sshCommand run by fetch", script: `
git init -q r && git -C r remote add origin ssh://corral.invalid/x && git -C r config core.sshCommand "touch $M; false"`,
		dir: "r", host: [][]string{{"fetch", "-q", "origin"}}},
	{name: "diff.external", script: `
git init -q r && echo a > r/f && git -C r add f && ` + sandboxGit + ` -C r commit -q -m x && echo b > r/f
git -C r config diff.external "touch $M"`,
		dir: "r", host: [][]string{{"diff"}}},
	{name: "ext:: remote URL", script: `
git init -q r && git -C r remote add origin "ext::sh -c touch% $M" && git -C r config protocol.ext.allow always`,
		dir: "r", host: [][]string{{"fetch", "-q", "origin"}}},
}

// markerVar stands for the marker's path in setup files.
const markerVar = "@MARKER@"

// TestGitPersistence leaves git config, hooks and repositories in the
// work dir that would run a command the next time the host's git runs
// there, and runs the host's git.
func TestGitPersistence(t *testing.T) {
	t.Parallel()
	for _, a := range gitAttacks {
		t.Run(strings.ReplaceAll(a.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			users(t, func(t *testing.T, u user) {
				attack(t, "persistence", "git: "+a.name)
				work := newDir(t, u, "work")
				marks := newDir(t, u, "marker")
				home := newDir(t, u, "home")
				marker := filepath.Join(marks, "ran")
				if a.setup != nil {
					a.setup(t, work)
					fixMarker(t, work, marker)
					own(t, u, work)
					time.Sleep(20 * time.Millisecond) // older than the run's start on the coarse clock
				}
				r := runScript(t, u, work, nil, "M="+marker+"\n"+a.script)
				dir := filepath.Join(work, a.dir)
				// As their owner would, to look inside after a run that
				// made them unreadable.
				os.Chmod(work, 0o755)
				os.Chmod(filepath.Join(work, "hide"), 0o755)
				for _, args := range a.host {
					hostGit(t, u, home, dir, args...)
				}
				if exists(marker) {
					t.Errorf("the host's git ran what the sandboxed command planted (%s exists)\n%s", marker, r)
				}
			})
		})
	}
}

// fixMarker replaces markerVar in the files setup wrote.
func fixMarker(t *testing.T, work, marker string) {
	t.Helper()
	filepath.Walk(work, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), markerVar) {
			writeFile(t, p, strings.ReplaceAll(string(b), markerVar, marker), fi.Mode())
		}
		return nil
	})
}

// hostGitSetup runs git on the host as the test's own user, to prepare a
// repository before the run.
func hostGitSetup(t *testing.T, dir string, args ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The folder may be the unprivileged user's already.
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// hostGit runs the host's git in dir as u, as a user would after the run:
// its own HOME (empty), no system config, output not looked at.
func hostGit(t *testing.T, u user, home, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := append([]string{"git"}, args...)
	if u.unpriv {
		argv = append([]string{setpriv, "--reuid", fmt.Sprint(nobody), "--regid", fmt.Sprint(nobody), "--clear-groups"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LANG=C"}
	out, err := cmd.CombinedOutput()
	t.Logf("host: git %s: %v\n%s", strings.Join(args, " "), err, out)
}

// TestGitSweepKeepsWork runs what an agent does with git in a sandbox:
// nothing of it may be quarantined, and the user's own config of the
// repository it works in stays as it was.
func TestGitSweepKeepsWork(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		hostGitSetup(t, work, "init", "-q", "-b", "main")
		hostGitSetup(t, work, "config", "alias.lg", "!git log --oneline")
		hostGitSetup(t, work, "-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "--allow-empty", "-m", "first")
		own(t, u, work)
		before := readFile(t, filepath.Join(work, ".git/config"))
		time.Sleep(20 * time.Millisecond)
		r := runScript(t, u, work, nil, `
set -e
echo x > f && git add f && `+sandboxGit+` commit -q -m second
git clone -q . clone && git -C clone config user.name agent && git -C clone remote add up https://example.invalid/up.git
git init -q -b main n && git -C n config user.email a@example.invalid
git -c protocol.file.allow=always -C n submodule --quiet add "$PWD/clone" sm
`+sandboxGit+` worktree add -q ../wt-$$ 2>/dev/null || true
git status --short >/dev/null`)
		if strings.Contains(r.stderr, "quarantined") {
			t.Errorf("the sweep quarantined an ordinary git workflow:\n%s", r)
		}
		if got := readFile(t, filepath.Join(work, ".git/config")); got != before {
			t.Errorf("the repository's config changed: %q, was %q", got, before)
		}
		if !exists(filepath.Join(work, "n/.git/modules/sm/config")) {
			t.Errorf("the submodule was not made:\n%s", r)
		}
	})
}

// TestGitSweepBeyondPathMax hides a repository deeper than PATH_MAX (25
// folders of 200-byte names): no path reaches it, but a shell that cds
// there step by step runs git in it.
func TestGitSweepBeyondPathMax(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "git: repository deeper than PATH_MAX")
		work := newDir(t, u, "work")
		r := runScript(t, u, work, nil, `
n=$(printf '%0200d' 0)
(for i in $(seq 25); do mkdir $n && cd -P $n 2>/dev/null || exit 1; done
mkdir -p r/.git/objects r/.git/refs && echo 'ref: refs/heads/main' > r/.git/HEAD &&
printf '[core]\n\tfsmonitor = touch /nonexistent/x\n' > r/.git/config) || echo MAKING-FAILED`)
		if strings.Contains(r.stdout, "MAKING-FAILED") {
			t.Fatalf("the script could not make the deep repository:\n%s", r)
		}
		if !strings.Contains(r.stderr, "r/.git/config.corral-quarantined") {
			t.Errorf("the repository 5000 bytes deep was not quarantined:\n%s", r)
		}
	})
}

// TestGitSweepStaysInRoots points a .git file, through a symlink, at a
// repository outside the writable roots: the sweep must not rename the
// files of a folder the command could not write (a way to make corral
// damage them), and quarantines the pointer instead.
func TestGitSweepStaysInRoots(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "git: make the sweep quarantine a repository outside the writable roots")
		work := newDir(t, u, "work")
		outside := newDir(t, u, "outside")
		hostGitSetup(t, outside, "init", "-q")
		hostGitSetup(t, outside, "config", "alias.lg", "!git log")
		writeFile(t, filepath.Join(outside, ".git/hooks/pre-commit"), "#!/bin/sh\n", 0o755)
		own(t, u, outside)
		time.Sleep(20 * time.Millisecond)
		r := runScript(t, u, work, nil, `
ln -s `+outside+`/.git lnk && mkdir w && echo 'gitdir: ../lnk' > w/.git
mkdir v && echo 'gitdir: `+outside+`/.git' > v/.git`)
		for _, f := range []string{".git/config", ".git/hooks/pre-commit"} {
			if !exists(filepath.Join(outside, f)) {
				t.Errorf("the sweep moved %s of a repository outside the writable roots:\n%s", f, r)
			}
		}
		for _, f := range []string{"w/.git", "v/.git"} {
			if exists(filepath.Join(work, f)) {
				t.Errorf("%s, which sends git outside the writable roots, was not quarantined:\n%s", f, r)
			}
		}
	})
}

// TestGitPersistenceRepoAbove works in a sub-folder of the user's
// repository: the repository's own git folder is above the work dir, out
// of reach, but its core.hooksPath and an included config name files
// inside the work dir.
func TestGitPersistenceRepoAbove(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "git: hooks and included config of the repository above the work dir")
		repo := newDir(t, u, "repo")
		marker := filepath.Join(newDir(t, u, "marker"), "ran")
		home := newDir(t, u, "home")
		hostGitSetup(t, repo, "init", "-q")
		hostGitSetup(t, repo, "config", "core.hooksPath", "tools/hooks")
		hostGitSetup(t, repo, "config", "include.path", "../tools/extra.cfg")
		writeFile(t, filepath.Join(repo, "tools/hooks/.keep"), "", 0o644)
		writeFile(t, filepath.Join(repo, "tools/extra.cfg"), "[user]\n\tname = me\n", 0o644)
		own(t, u, repo)
		time.Sleep(20 * time.Millisecond)
		work := filepath.Join(repo, "tools")
		r := runScript(t, u, work, nil, `
printf '#!/bin/sh\ntouch `+marker+`\n' > hooks/pre-commit && chmod +x hooks/pre-commit
printf '[core]\n\tfsmonitor = "touch `+marker+`"\n' > extra.cfg`)
		hostGit(t, u, home, repo, "status")
		hostGit(t, u, home, repo, "-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "--allow-empty", "-m", "x")
		if exists(marker) {
			t.Errorf("the host's git ran what the sandboxed command planted (%s exists)\n%s", marker, r)
		}
	})
}
