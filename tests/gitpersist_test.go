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
	// chmod are folders (relative to the work dir) the user makes 0755
	// again before running git, to look inside after a run that made
	// them unsearchable.
	chmod []string
}

// knownRepo makes the work dir a repository at launch: its git folder is
// protected, and its objects folder is where git writes.
func knownRepo(t *testing.T, work string) {
	hostGitSetup(t, work, "init", "-q")
}

// includingRepo is a repository at launch whose config includes
// ../conf/git.cfg and sets core.hooksPath tools/hooks, at dir of the work
// dir.
func includingRepo(dir string) func(t *testing.T, work string) {
	return func(t *testing.T, work string) {
		r := filepath.Join(work, dir)
		hostGitSetup(t, r, "init", "-q")
		hostGitSetup(t, r, "config", "include.path", "../conf/git.cfg")
		hostGitSetup(t, r, "config", "core.hooksPath", "tools/hooks")
		writeFile(t, filepath.Join(r, "conf/git.cfg"), "[user]\n\tname = me\n", 0o644)
		writeFile(t, filepath.Join(r, "tools/hooks/.keep"), "", 0o644)
	}
}

// hostCommit is a commit on the host: it runs the pre-commit hook.
var hostCommit = []string{"-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "--allow-empty", "-m", "x"}

// sweep2Attacks follow pointers (commondir, gitdir:, include.path,
// core.hooksPath) where a string-cleaning or error-ignoring sweep loses
// them, hide repositories in the user's .git/objects, and take the
// quarantine names beforehand.
var sweep2Attacks = []gitAttack{
	{name: "commondir through a symlink then ..", script: `
mkdir -p s/t s/c/objects s/c/refs/heads r/.git
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' "$M" > s/c/config
echo 'ref: refs/heads/main' > r/.git/HEAD && ln -s ../../s/t r/.git/sl && echo 'sl/../c' > r/.git/commondir`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "commondir through a symlink then .., pre-commit hook", script: `
mkdir -p s/t s/c/objects s/c/refs/heads s/c/hooks r/.git
printf '#!/bin/sh\ntouch %s\n' "$M" > s/c/hooks/pre-commit && chmod +x s/c/hooks/pre-commit
echo 'ref: refs/heads/main' > r/.git/HEAD && ln -s ../../s/t r/.git/sl && echo 'sl/../c' > r/.git/commondir`,
		dir: "r", host: [][]string{hostCommit}},
	{name: "commondir through a symlink to an absolute path", script: `
mkdir -p s/t s/c/objects s/c/refs/heads r/.git
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' "$M" > s/c/config
echo 'ref: refs/heads/main' > r/.git/HEAD && ln -s "$PWD/s/t" r/.git/sl && echo 'sl/../c' > r/.git/commondir`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "commondir through a chain of relative symlinks", script: `
mkdir -p s/u/v/t s/u/c/objects s/u/c/refs/heads r/.git
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' "$M" > s/u/c/config
ln -s v/t s/u/l1 && ln -s ../../s/u/l1 r/.git/l2 && ln -s l2 r/.git/l3
echo 'ref: refs/heads/main' > r/.git/HEAD && echo 'l3/../../c' > r/.git/commondir`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "commondir with a NUL byte after the path", script: `
mkdir -p s/c/objects s/c/refs/heads r/.git
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' "$M" > s/c/config
echo 'ref: refs/heads/main' > r/.git/HEAD && printf '../../s/c\0' > r/.git/commondir`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "commondir to a search-only folder", script: `
mkdir -p s/c/objects s/c/refs/heads r/.git
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' "$M" > s/c/config
echo 'ref: refs/heads/main' > r/.git/HEAD && echo '../../s/c' > r/.git/commondir && chmod 111 s/c`,
		dir: "r", host: [][]string{{"status"}}, chmod: []string{"s/c"}},
	{name: "commondir to a folder with no search right", script: `
mkdir -p s/c/objects s/c/refs/heads r/.git
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' "$M" > s/c/config
echo 'ref: refs/heads/main' > r/.git/HEAD && echo '../../s/c' > r/.git/commondir && chmod 600 s`,
		dir: "r", host: [][]string{{"status"}}, chmod: []string{"s"}},
	{name: "git folder with no search right holding only HEAD and commondir", script: `
mkdir -p s/c/objects s/c/refs/heads r/.git
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' "$M" > s/c/config
echo 'ref: refs/heads/main' > r/.git/HEAD && echo '../../s/c' > r/.git/commondir && chmod 600 r/.git`,
		dir: "r", host: [][]string{{"status"}}, chmod: []string{"r/.git"}},
	{name: "new repository with no search right on its git folder", script: `
git init -q r && git -C r config core.fsmonitor "touch $M; false" && chmod 600 r/.git`,
		dir: "r", host: [][]string{{"status"}}, chmod: []string{"r/.git"}},
	{name: ".git file with a NUL byte into the user's .git/objects", setup: knownRepo, script: `
git init -q --bare .git/objects/zz/g && git -C .git/objects/zz/g config core.fsmonitor "touch $M; false"
git -C .git/objects/zz/g config core.bare false
mkdir sub && printf 'gitdir: ../.git/objects/zz/g\0' > sub/.git`,
		dir: "sub", host: [][]string{{"status"}}},
	{name: ".git file through a symlink then .. into the user's .git/objects", setup: knownRepo, script: `
mkdir -p .git/objects/zz/q && git init -q .git/objects/zz/g && git -C .git/objects/zz/g config core.fsmonitor "touch $M; false"
mkdir sub && ln -s ../.git/objects/zz/q sub/sl && printf 'gitdir: sl/../g/.git\n' > sub/.git`,
		dir: "sub", host: [][]string{{"status"}}},
	{name: "repository in the user's .git/objects reached by a symlink", setup: knownRepo, script: `
mkdir -p .git/objects/zz && git init -q .git/objects/zz/proj && git -C .git/objects/zz/proj config core.fsmonitor "touch $M; false"
ln -s .git/objects/zz/proj proj`,
		dir: "proj", host: [][]string{{"status"}}},
	{name: "repository in an object folder of the user's .git/objects", setup: func(t *testing.T, work string) {
		hostGitSetup(t, work, "init", "-q")
		hostGitSetup(t, work, "-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "--allow-empty", "-m", "x")
	}, script: `
d=$(ls -d .git/objects/[0-9a-f][0-9a-f] | head -1)
git init -q $d/p && git -C $d/p config core.fsmonitor "touch $M; false" && ln -s $d/p proj`,
		dir: "proj", host: [][]string{{"status"}}},
	{name: "folder of an included config replaced by an absolute symlink", setup: includingRepo("."), script: `
mkdir -p evil && printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$M" > evil/git.cfg
mv conf conf.old && ln -s "$PWD/evil" conf`,
		dir: ".", host: [][]string{{"status"}}},
	{name: "deep repository: include and hooksPath folders replaced by absolute symlinks", setup: includingRepo("p/q/s/r"), script: `
mkdir -p evil/hooks && printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$M" > evil/git.cfg
printf '#!/bin/sh\ntouch %s\n' "$M" > evil/hooks/pre-commit && chmod +x evil/hooks/pre-commit
cd p/q/s/r && mv conf conf.old && ln -s "$OLDPWD/evil" conf && mv tools tools.old && ln -s "$OLDPWD/evil" tools`,
		dir: "p/q/s/r", host: [][]string{{"status"}, hostCommit}},
	{name: "included config rewritten, its folder made search-only", setup: includingRepo("."), script: `
printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$M" > conf/git.cfg && chmod 111 conf`,
		dir: ".", host: [][]string{{"status"}}, chmod: []string{"conf"}},
	{name: "hook added, hooksPath folder made search-only", setup: includingRepo("p/q/s/r"), script: `
printf '#!/bin/sh\ntouch %s\n' "$M" > p/q/s/r/tools/hooks/pre-commit && chmod +x p/q/s/r/tools/hooks/pre-commit && chmod 111 p/q/s/r/tools/hooks p/q/s/r/tools`,
		dir: "p/q/s/r", host: [][]string{hostCommit}, chmod: []string{"p/q/s/r/tools", "p/q/s/r/tools/hooks"}},
	{name: "included config reached through a symlink loop", setup: includingRepo("p/q/s/r"), script: `
cd p/q/s/r && mv conf conf.old && ln -s conf conf`,
		dir: "p/q/s/r", host: [][]string{{"status"}}},
	{name: "user's config in syntax the strict parser refuses, included file rewritten", setup: func(t *testing.T, work string) {
		r := filepath.Join(work, "p/q/s/r")
		hostGitSetup(t, r, "init", "-q")
		cfg := filepath.Join(r, ".git/config")
		writeFile(t, cfg, readFile(t, cfg)+"[include]\n\tpath = ../conf/extra.cfg\n[alias]\n\tlg = log --graph \\\n\t  --oneline\n", 0o644)
		writeFile(t, filepath.Join(r, "conf/extra.cfg"), "[user]\n\tname = me\n", 0o644)
	}, script: `
printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$M" > p/q/s/r/conf/extra.cfg`,
		dir: "p/q/s/r", host: [][]string{{"status"}}},
	{name: "hook in a new repository, hooks folder made unsearchable", script: `
git init -q r && printf '#!/bin/sh\ntouch %s\n' "$M" > r/.git/hooks/pre-commit && chmod +x r/.git/hooks/pre-commit && chmod 600 r/.git/hooks`,
		dir: "r", host: [][]string{hostCommit}, chmod: []string{"r/.git/hooks"}},
	{name: "hook in an existing deep repository, hooks folder made unsearchable", setup: func(t *testing.T, work string) {
		hostGitSetup(t, filepath.Join(work, "p/q/s/r"), "init", "-q")
	}, script: `
printf '#!/bin/sh\ntouch %s\n' "$M" > p/q/s/r/.git/hooks/pre-commit && chmod +x p/q/s/r/.git/hooks/pre-commit && chmod 600 p/q/s/r/.git/hooks`,
		dir: "p/q/s/r", host: [][]string{hostCommit}, chmod: []string{"p/q/s/r/.git/hooks"}},
	{name: "attributes in a new repository, info folder made unsearchable", script: `
git init -q r && echo data > r/f && echo '* filter=ev' > r/.git/info/attributes && chmod 600 r/.git/info
git -C r config filter.ev.clean "touch $M; cat"`,
		dir: "r", host: [][]string{{"add", "f"}}, chmod: []string{"r/.git/info"}},
	{name: "info symlink in the work dir's repository, whose info was missing at launch", setup: func(t *testing.T, work string) {
		hostGitSetup(t, work, "init", "-q")
		hostGitSetup(t, work, "config", "filter.ev.clean", "touch "+markerVar+"; cat")
		os.RemoveAll(filepath.Join(work, ".git/info"))
		writeFile(t, filepath.Join(work, "f"), "data\n", 0o644)
	}, script: `
mkdir evil && echo '* filter=ev' > evil/attributes && ln -s ../evil .git/info`,
		dir: ".", host: [][]string{{"add", "f"}}},
	{name: "work dir made listable but not searchable", script: `
git init -q r && git -C r config core.fsmonitor "touch $M; false" && chmod 600 .`,
		dir: "r", host: [][]string{{"status"}}},
	{name: "repositories hidden in folders made search-only and write-search-only", script: `
mkdir h1 h2 && git init -q h1/r && git -C h1/r config core.fsmonitor "touch $M; false" && chmod 100 h1
git init -q h2/r && git -C h2/r config core.fsmonitor "touch $M; false" && chmod 300 h2`,
		dir: "h1/r", host: [][]string{{"status"}, {"-C", "../../h2/r", "status"}}, chmod: []string{"h1", "h2"}},
	{name: ".git file through /proc/self/cwd", script: `
mkdir -p a/b && git init -q a/b/x && git -C a/b/x config core.fsmonitor "touch $M; false" && mv a/b/x/.git a/b/x.git && rm -r a/b/x
printf 'gitdir: /proc/self/cwd/x.git\n' > a/b/.git`,
		dir: "a/b", host: [][]string{{"status"}}},
	{name: "hook in the folder a core.hooksPath of an included file names", setup: func(t *testing.T, work string) {
		r := filepath.Join(work, "p/q/s/r")
		hostGitSetup(t, r, "init", "-q")
		hostGitSetup(t, r, "config", "include.path", "../conf/git.cfg")
		writeFile(t, filepath.Join(r, "conf/git.cfg"), "[core]\n\thooksPath = tools/hooks\n", 0o644)
		writeFile(t, filepath.Join(r, "tools/hooks/.keep"), "", 0o644)
	}, script: `
printf '#!/bin/sh\ntouch %s\n' "$M" > p/q/s/r/tools/hooks/pre-commit && chmod +x p/q/s/r/tools/hooks/pre-commit`,
		dir: "p/q/s/r", host: [][]string{hostCommit}},
	{name: "folder an existing worktree's commondir names replaced by an absolute symlink", setup: func(t *testing.T, work string) {
		// A deep repository (not protected at launch) sharing the
		// config of p/common through its commondir, as a linked
		// worktree does.
		writeFile(t, filepath.Join(work, "p/common/config"), "[core]\n\trepositoryformatversion = 0\n", 0o644)
		writeFile(t, filepath.Join(work, "p/q/s/r/.git/HEAD"), "ref: refs/heads/main\n", 0o644)
		writeFile(t, filepath.Join(work, "p/q/s/r/.git/commondir"), "../../../../common\n", 0o644)
		for _, d := range []string{"p/common/objects", "p/common/refs/heads"} {
			os.MkdirAll(filepath.Join(work, d), 0o755)
		}
	}, script: `
mkdir -p evil/objects evil/refs/heads && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' "$M" > evil/config
mv p/common p/common.old && ln -s "$PWD/evil" p/common`,
		dir: "p/q/s/r", host: [][]string{{"status"}}},
	{name: "user's config with the include on the section header's line, included file rewritten", setup: func(t *testing.T, work string) {
		r := filepath.Join(work, "p/q/s/r")
		hostGitSetup(t, r, "init", "-q")
		cfg := filepath.Join(r, ".git/config")
		writeFile(t, cfg, readFile(t, cfg)+"[include] path = ../conf/extra.cfg\n[core] hooksPath = tools/hooks\n", 0o644)
		writeFile(t, filepath.Join(r, "conf/extra.cfg"), "[user]\n\tname = me\n", 0o644)
		writeFile(t, filepath.Join(r, "tools/hooks/.keep"), "", 0o644)
	}, script: `
printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$M" > p/q/s/r/conf/extra.cfg
printf '#!/bin/sh\ntouch %s\n' "$M" > p/q/s/r/tools/hooks/pre-commit && chmod +x p/q/s/r/tools/hooks/pre-commit`,
		dir: "p/q/s/r", host: [][]string{{"status"}, hostCommit}},
	{name: "quarantine names taken beforehand", script: `
git init -q r && git -C r config core.fsmonitor "touch $M; false"
touch r/.git/config.corral-quarantined; for i in $(seq 2 101); do touch r/.git/config.corral-quarantined.$i; done`,
		dir: "r", host: [][]string{{"status"}}},
}

// TestGitPersistenceSweep2 runs sweep2Attacks as TestGitPersistence runs
// gitAttacks.
func TestGitPersistenceSweep2(t *testing.T) {
	t.Parallel()
	runGitAttacks(t, sweep2Attacks)
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
	runGitAttacks(t, gitAttacks)
}

func runGitAttacks(t *testing.T, attacks []gitAttack) {
	for _, a := range attacks {
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
				for _, d := range a.chmod {
					os.Chmod(filepath.Join(work, d), 0o755)
				}
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

// TestGitGlobalHooksPath: the user's global git config sets a relative
// core.hooksPath (.githooks): it names a folder in every repository's
// work tree, the one at launch and any the command makes.
func TestGitGlobalHooksPath(t *testing.T) {
	t.Parallel()
	for _, hp := range []string{".githooks", "tools/hooks"} {
		t.Run(strings.ReplaceAll(hp, "/", "_"), func(t *testing.T) {
			users(t, func(t *testing.T, u user) {
				attack(t, "persistence", "git: hooks in the folder a relative core.hooksPath of the global config names")
				home := newDir(t, u, "home")
				writeFile(t, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = "+hp+"\n", 0o644)
				work := newDir(t, u, "work")
				marker := filepath.Join(newDir(t, u, "marker"), "ran")
				hostGitSetup(t, work, "init", "-q")
				own(t, u, work)
				time.Sleep(20 * time.Millisecond)
				r := runScriptArgs(t, u, work, homeEnv(home), nil, `
hook() { mkdir -p "$1/`+hp+`" && printf '#!/bin/sh\ntouch `+marker+`\n' > "$1/`+hp+`/pre-commit" && chmod +x "$1/`+hp+`/pre-commit"; }
hook . ; git init -q r && hook r; mkdir -p a/b && git init -q a/b/deep && hook a/b/deep
git init -q wt && git -C wt config core.worktree ../../w2 && mkdir w2 && hook w2
true`)
				for _, d := range []string{".", "r", "a/b/deep", "wt"} {
					hostGit(t, u, home, filepath.Join(work, d), hostCommit...)
				}
				if exists(marker) {
					t.Errorf("the host's git ran a hook the sandboxed command planted (%s exists)\n%s", marker, r)
				}
			})
		})
	}
}

// TestGitGlobalConfigNamesWorkDir: the user's global git config includes
// a file in the work dir and sets an absolute core.hooksPath there: the
// command rewrites the one and plants a hook in the other.
func TestGitGlobalConfigNamesWorkDir(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "git: a file the global config includes and its absolute core.hooksPath, in the work dir")
		home := newDir(t, u, "home")
		work := newDir(t, u, "work")
		marker := filepath.Join(newDir(t, u, "marker"), "ran")
		writeFile(t, filepath.Join(home, ".gitconfig"), "[include]\n\tpath = "+work+"/conf/git.cfg\n[core]\n\thooksPath = "+work+"/hooks\n", 0o644)
		writeFile(t, filepath.Join(work, "conf/git.cfg"), "[user]\n\tname = me\n", 0o644)
		writeFile(t, filepath.Join(work, "hooks/.keep"), "", 0o644)
		hostGitSetup(t, filepath.Join(work, "r"), "init", "-q")
		own(t, u, work)
		time.Sleep(20 * time.Millisecond)
		r := runScriptArgs(t, u, work, homeEnv(home), nil, `
printf '[core]\n\tfsmonitor = "touch `+marker+`; false"\n' > conf/git.cfg
printf '#!/bin/sh\ntouch `+marker+`\n' > hooks/pre-commit && chmod +x hooks/pre-commit`)
		hostGit(t, u, home, filepath.Join(work, "r"), "status")
		hostGit(t, u, home, filepath.Join(work, "r"), hostCommit...)
		if exists(marker) {
			t.Errorf("the host's git ran what the sandboxed command planted (%s exists)\n%s", marker, r)
		}
	})
}

// TestGitHooksPathWorkTrees: a relative core.hooksPath is found from the
// top of the work tree git runs in, which a .git file, a .git folder with
// a commondir or a core.worktree of config.worktree the command made
// chooses: hooks written there run for an existing repository.
func TestGitHooksPathWorkTrees(t *testing.T) {
	t.Parallel()
	hook := func(d string) string {
		return `mkdir -p ` + d + ` && printf '#!/bin/sh\ntouch %s\n' "$M" > ` + d + `/pre-commit && chmod +x ` + d + `/pre-commit` + "\n"
	}
	for _, c := range []struct {
		name, global, script, dir, earlier string
		repoHooks, linked                  bool
	}{
		{name: "repository hooksPath, new .git file next to hooks an earlier run left", repoHooks: true, earlier: "sub/.husky/_",
			script: `echo "gitdir: ../.git" > sub/.git`, dir: "sub"},
		{name: "repository hooksPath, new commondir next to hooks an earlier run left", repoHooks: true, earlier: "sub/.husky/_",
			script: `mkdir -p sub/.git && echo "ref: refs/heads/master" > sub/.git/HEAD && echo ../../.git > sub/.git/commondir`, dir: "sub"},
		{name: "global hooksPath, new .git file next to hooks an earlier run left", global: ".githooks", earlier: "sub/.githooks",
			script: `echo "gitdir: ../.git" > sub/.git`, dir: "sub"},
		{name: "repository hooksPath, the user's linked worktree", repoHooks: true, linked: true,
			script: hook("w2/.husky/_"), dir: "w2"},
		{name: "repository hooksPath, new .git file in a sub-folder", repoHooks: true,
			script: hook("sub/.husky/_") + `echo "gitdir: ../.git" > sub/.git`, dir: "sub"},
		{name: "repository hooksPath, new .git folder with a commondir", repoHooks: true,
			script: hook("sub/.husky/_") + `mkdir -p sub/.git && echo "ref: refs/heads/master" > sub/.git/HEAD && echo ../../.git > sub/.git/commondir`, dir: "sub"},
		{name: "global hooksPath, new .git file in a sub-folder", global: ".githooks",
			script: hook("sub/.githooks") + `echo "gitdir: ../.git" > sub/.git`, dir: "sub"},
		{name: "global hooksPath, core.worktree in config.worktree", global: ".githooks",
			script: `git init -q r && git -C r config extensions.worktreeConfig true
` + hook("other/.githooks") + `printf '[core]\n\tworktree = ../../other\n' > r/.git/config.worktree`, dir: "r"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			users(t, func(t *testing.T, u user) {
				attack(t, "persistence", "git: hooks where a relative core.hooksPath leads from a work tree the command chose: "+c.name)
				home := newDir(t, u, "home")
				if c.global != "" {
					writeFile(t, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = "+c.global+"\n", 0o644)
				}
				work := newDir(t, u, "work")
				marker := filepath.Join(newDir(t, u, "marker"), "ran")
				hostGitSetup(t, work, "init", "-q")
				if c.repoHooks {
					hostGitSetup(t, work, "config", "core.hooksPath", ".husky/_")
					os.MkdirAll(filepath.Join(work, ".husky/_"), 0o755)
				}
				if c.earlier != "" {
					writeFile(t, filepath.Join(work, c.earlier, "pre-commit"), "#!/bin/sh\ntouch "+marker+"\n", 0o755)
				}
				if c.linked {
					hostGitSetup(t, work, "-c", "user.name=a", "-c", "user.email=a@example.invalid", "commit", "-q", "--allow-empty", "-m", "x")
					hostGitSetup(t, work, "worktree", "add", "-q", filepath.Join(work, "w2"))
				}
				own(t, u, work)
				own(t, u, home)
				time.Sleep(20 * time.Millisecond)
				r := runScriptArgs(t, u, work, homeEnv(home), nil, "M="+marker+"\n"+c.script+"\ntrue")
				hostGit(t, u, home, filepath.Join(work, c.dir), hostCommit...)
				if exists(marker) {
					t.Errorf("the host's git ran a hook the sandboxed command planted (%s exists)\n%s", marker, r)
				}
			})
		})
	}
}

// TestProtectedNamesInSubFolders: the root-relative protected names
// (.envrc, .vscode, .mcp.json...) are read by direnv, IDEs and agents in
// whatever folder the user opens: made or changed in a sub-folder during
// the run, they are quarantined; the user's unchanged ones stay.
func TestProtectedNamesInSubFolders(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "protected names (.envrc, .vscode, .mcp.json, .claude) in sub-folders of the work dir")
		work := newDir(t, u, "work")
		writeFile(t, filepath.Join(work, "old/.claude/settings.json"), "{}\n", 0o644)
		writeFile(t, filepath.Join(work, "keep/.vscode/settings.json"), "{}\n", 0o644)
		writeFile(t, filepath.Join(work, "keep/.envrc"), "export A=1\n", 0o644)
		own(t, u, work)
		time.Sleep(20 * time.Millisecond)
		r := runScript(t, u, work, nil, `
mkdir -p sub/deep a/b/.vscode && echo 'touch /tmp/x' > sub/deep/.envrc
echo '{"tasks":[]}' > a/b/.vscode/tasks.json && echo '{}' > sub/.mcp.json
echo '{"hooks":{}}' > old/.claude/settings.json
true`)
		for _, p := range []string{"sub/deep/.envrc", "a/b/.vscode", "sub/.mcp.json", "old/.claude"} {
			if exists(filepath.Join(work, p)) {
				t.Errorf("%s is still there after the run\n%s", p, r)
			}
		}
		for _, p := range []string{"keep/.vscode/settings.json", "keep/.envrc"} {
			if !exists(filepath.Join(work, p)) {
				t.Errorf("the user's unchanged %s was moved\n%s", p, r)
			}
		}
	})
}

// TestProtectedNamesGrantedExactly: a write grant that names a protected
// path in a sub-folder exactly keeps what the command writes there.
func TestProtectedNamesGrantedExactly(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		os.MkdirAll(filepath.Join(work, "proj/.vscode"), 0o755)
		sk := writeSkill(t, newDir(t, u, "skills"), "ide", "  fs:\n    write: [\"$WORK_DIR/**\", \"$WORK_DIR/proj/.vscode/**\"]\n  exec: [sh, mkdir]\n")
		own(t, u, work)
		time.Sleep(20 * time.Millisecond)
		r := runScriptArgs(t, u, work, nil, []string{"--skill", sk}, `
echo '{}' > proj/.vscode/tasks.json; mkdir -p q/.vscode && echo '{}' > q/.vscode/tasks.json`)
		if !exists(filepath.Join(work, "proj/.vscode/tasks.json")) {
			t.Errorf("the granted proj/.vscode was quarantined\n%s", r)
		}
		if exists(filepath.Join(work, "q/.vscode")) {
			t.Errorf("q/.vscode, not granted, is still there\n%s", r)
		}
	})
}
