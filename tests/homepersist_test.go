//go:build linux

package tests

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Persistence through the home folder and tool configs: a command whose
// write grant covers $HOME (or a folder of tool configs) must leave
// nothing there that a host tool runs later. Existing protected paths
// stay read-only; ones the command creates are renamed to
// NAME.corral-quarantined-RANDOM after the run. Every check is made from the
// host, after corral returned.

// homeFiles are planted in the fake home folder before each run.
var homeFiles = map[string]string{
	".bashrc":                  "# bashrc\n",
	".profile":                 "# profile\n",
	".zshrc":                   "# zshrc\n",
	".gitconfig":               "[user]\n\tname = u\n",
	".npmrc":                   "fund=false\n",
	".vimrc":                   "set nocp\n",
	".inputrc":                 "set bell-style none\n",
	".config/fish/config.fish": "# fish\n",
	".config/git/config":       "[core]\n",
	".config/nvim/init.lua":    "-- nvim\n",
	".ssh/config":              "Host *\n",
	".ssh/authorized_keys":     "ssh-ed25519 AAAA user\n",
	".local/bin/tool":          "#!/bin/sh\n",
	".local/lib/python3.11/site-packages/ok.py": "x = 1\n",
	".claude/settings.json":                     "{}\n",
	"proj/README":                               "scratch\n",
}

// homeDirs are planted empty.
var homeDirs = []string{".config/autostart-not", ".cache"}

// fakeHome makes a home folder with homeFiles, owned by u.
func fakeHome(t *testing.T, u user) string {
	t.Helper()
	home := newDir(t, u, "home")
	for name, content := range homeFiles {
		writeFile(t, filepath.Join(home, name), content, 0o644)
	}
	for _, d := range homeDirs {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	own(t, u, home)
	return home
}

// homeEnv is the test environment with HOME set to home.
func homeEnv(home string) []string {
	var env []string
	for _, kv := range defaultEnv() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "XDG_CONFIG_HOME=")
}

// snapshot records every path below dir: its type, and a file's content
// or a link's target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			data, _ := os.ReadFile(p)
			out[rel] = "file " + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkHome fails unless every path of before is unchanged in dir and
// every new one is the attack script, inside a scratch folder, or
// quarantined (under a quarantined name, or inside a quarantined folder).
// It returns the quarantined names.
func checkHome(t *testing.T, dir string, before map[string]string, scratch []string, r result) []string {
	t.Helper()
	after := snapshot(t, dir)
	for p, was := range before {
		if now, ok := after[p]; !ok {
			t.Errorf("%s was removed on the host", p)
		} else if now != was {
			t.Errorf("%s changed on the host: was %q, now %q", p, was, now)
		}
	}
	var quarantined []string
	for p, now := range after {
		if _, ok := before[p]; ok || p == "attack.sh" {
			continue
		}
		if strings.Contains(p, ".corral-quarantined") {
			if !strings.Contains(filepath.Dir(p), ".corral-quarantined") {
				quarantined = append(quarantined, p)
			}
			continue
		}
		if now == "dir" || slices.ContainsFunc(scratch, func(s string) bool { return p == s || strings.HasPrefix(p, s+"/") }) {
			continue // a folder is harmless until something is in it
		}
		t.Errorf("%s (%s) appeared on the host where a host tool reads it", p, strings.SplitN(now, "\n", 2)[0])
	}
	if t.Failed() {
		t.Logf("run:\n%s", r)
	}
	return quarantined
}

// homeAttack is run in the home folder: it tries each kind of write on
// each kind of protected path, existing and missing. Every step may fail;
// the host decides.
const homeAttack = `
cd "$HOME"
mkdir -p proj/x proj/envd proj/cb proj/sd/user
echo evil > proj/evil
echo 'import os; os.system("touch /tmp/pwned")' > proj/evil.pth
echo '[Unit]' > proj/sd/user/evil.service
echo evil > proj/envd/evil.conf
echo evil > proj/cb/cargo
# write existing files and into existing folders
echo evil >> .bashrc; echo evil > .profile; echo evil >> .gitconfig; echo evil > .npmrc
echo evil >> .config/fish/config.fish; echo evil > .config/fish/conf.d.fish
echo '[core] fsmonitor = evil' >> .config/git/config; echo evil > .config/git/attributes
echo evil >> .ssh/authorized_keys; echo 'ProxyCommand evil' > .ssh/config; echo evil > .ssh/rc
echo evil > .local/bin/git; cp proj/evil.pth .local/lib/python3.11/site-packages/evil.pth
echo evil > .local/lib/python3.11/site-packages/usercustomize.py
echo '{"hooks":1}' > .claude/settings.json; echo evil > .vimrc; echo evil > .config/nvim/init.lua
# create missing ones
echo evil > .zlogin; echo evil > .bash_aliases; echo evil > .envrc; echo evil > .zshenv
mkdir -p .config/systemd/user && cp proj/sd/user/evil.service .config/systemd/user/
mkdir -p .config/autostart && echo evil > .config/autostart/evil.desktop
mkdir -p bin && echo evil > bin/ls
mkdir -p .vscode && echo '{}' > .vscode/tasks.json
echo '{"mcpServers":{}}' > .mcp.json; echo '{}' > .claude.json
mkdir -p .config/corral && echo 'caps: {}' > .config/corral/policy.yaml
mkdir -p .gradle && echo 'exec evil' > .gradle/init.gradle; echo evil > .bazelrc; echo 'os:cmd("evil").' > .erlang
mkdir -p .config/i3 && echo 'exec evil' > .config/i3/config
echo '[Default Applications]' > .config/mimeapps.list
mkdir -p .local/share/applications && echo '[Desktop Entry]' > .local/share/applications/evil.desktop
# rename over, and move the folders that hold protected paths away
mv -f proj/evil .profile; mv -f proj/x .config/fish
mv .config .config.old; mv .local .local.old; mv .ssh .ssh.old; mv .local/bin proj/bin2
mv .claude proj/claude.old
# replace with symlinks, and reach missing paths through symlinks
ln -sfn proj/evil .zshrc; ln -sfn ../proj/x .config/nvim
ln -s proj/evil .zlogout
ln -s ../proj/envd .config/environment.d
mkdir -p .cargo && ln -s ../proj/cb .cargo/bin
ln -s proj/sd .xinitrc
# hard links: to a missing name, and of a protected file to write it
ln proj/evil .inputrc; ln -f proj/evil .vimrc; ln proj/evil .kshrc
ln .bashrc proj/bashrc-link && echo evil >> proj/bashrc-link
ln .ssh/config proj/sshconfig-link && echo evil >> proj/sshconfig-link
true
`

// homeMissing are paths homeAttack creates: each must be quarantined.
var homeMissing = []string{".zlogin", ".bash_aliases", ".envrc", ".zshenv", ".config/systemd", ".config/autostart", "bin",
	".vscode", ".mcp.json", ".claude.json", ".config/corral", ".zlogout", ".config/environment.d", ".cargo/bin", ".xinitrc", ".kshrc",
	".gradle/init.gradle", ".bazelrc", ".erlang", ".config/i3", ".config/mimeapps.list", ".local/share/applications"}

func checkQuarantined(t *testing.T, got []string, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w+".corral-quarantined-") }) {
			t.Errorf("%s: want it quarantined as %s.corral-quarantined-RANDOM; quarantined: %q", w, w, got)
		}
	}
}

// TestHomeWorkDirPersistence runs with the home folder itself as the work
// dir (the default sandbox: the work dir writable).
func TestHomeWorkDirPersistence(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "write, create, rename over, symlink and hard-link shell, ssh, PATH, Python, systemd, editor and agent files with $HOME as the work dir")
		home := fakeHome(t, u)
		before := snapshot(t, home)
		writeFile(t, filepath.Join(home, "attack.sh"), homeAttack+"\necho "+attackDone+"\n", 0o644)
		own(t, u, filepath.Join(home, "attack.sh"))
		report := filepath.Join(newDir(t, u, "report"), "r.json")
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", home, "--report", report, "--", "sh", "attack.sh"}, dir: home, env: homeEnv(home)})
		if !strings.Contains(r.stdout, attackDone) {
			t.Fatalf("the attack script did not run to its end:\n%s", r)
		}
		got := checkHome(t, home, before, []string{"proj", ".cache"}, r)
		checkQuarantined(t, got, homeMissing)
		if !strings.Contains(r.stderr, "THE HOME FOLDER "+home+" IS WRITABLE") {
			t.Errorf("no loud warning about the writable home folder on stderr:\n%s", r)
		}
		var rep struct {
			Warnings    []string
			Quarantined []struct{ Path, To string }
		}
		if err := json.Unmarshal([]byte(readFile(t, report)), &rep); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "THE HOME FOLDER") }) {
			t.Errorf("the report's warnings do not name the writable home folder: %q", rep.Warnings)
		}
		if len(rep.Quarantined) != len(got) {
			t.Errorf("the report lists %d quarantined paths, the host has %d: %+v", len(rep.Quarantined), len(got), rep.Quarantined)
		}
	})
}

// TestHomeGrantPersistence: the work dir is a project folder, and a
// skill's write grant covers the home folder ($HOME/**), or only the
// folder of tool configs ($HOME/.config/**).
func TestHomeGrantPersistence(t *testing.T) {
	for _, tc := range []struct{ name, grant string }{{"home", "$HOME/**"}, {"config", "$HOME/.config/**"}} {
		t.Run(tc.name, func(t *testing.T) {
			users(t, func(t *testing.T, u user) {
				attack(t, "persistence", "the same attacks through a write grant of "+tc.grant)
				home := fakeHome(t, u)
				work := newDir(t, u, "work")
				sk := writeSkill(t, newDir(t, asSelf, "skill"), "homewriter", "  fs:\n    write: [\""+tc.grant+"\", \"$WORK_DIR/**\"]\n")
				before := snapshot(t, home)
				writeFile(t, filepath.Join(work, "attack.sh"), homeAttack+"\necho "+attackDone+"\n", 0o644)
				own(t, u, filepath.Join(work, "attack.sh"))
				r := u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", sk, "--", "sh", "attack.sh"}, dir: work, env: homeEnv(home)})
				if !strings.Contains(r.stdout, attackDone) {
					t.Fatalf("the attack script did not run to its end:\n%s", r)
				}
				scratch := []string{"proj", ".cache"}
				want := homeMissing
				if tc.name == "config" {
					// Only .config is writable: the rest stays as it was.
					scratch = []string{".cache"}
					want = []string{".config/systemd", ".config/autostart", ".config/corral", ".config/environment.d"}
				}
				got := checkHome(t, home, before, scratch, r)
				checkQuarantined(t, got, want)
				loud := strings.Contains(r.stderr, "THE HOME FOLDER")
				if loud != (tc.name == "home") {
					t.Errorf("loud warning about the home folder shown: %v, want %v:\n%s", loud, tc.name == "home", r)
				}
			})
		})
	}
}

// TestHomeGrantNamesExactly: a grant naming a protected path exactly
// makes it writable (the user means it); the others stay protected.
func TestHomeGrantNamesExactly(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		home := fakeHome(t, u)
		sk := writeSkill(t, newDir(t, asSelf, "skill"), "npm", "  fs:\n    write: [\"$HOME/.npmrc\", \"$HOME/.config/fish/**\", \"$WORK_DIR/**\"]\n")
		r := u.run(t, runOpts{args: []string{"exec", "--work-dir", home, "--skill", sk, "--", "sh", "-c",
			"echo registry=x > .npmrc; echo ok > .config/fish/config.fish; echo evil >> .bashrc; true"}, dir: home, env: homeEnv(home)})
		if r.code != 0 {
			t.Fatalf("run failed:\n%s", r)
		}
		if got := readFile(t, filepath.Join(home, ".npmrc")); got != "registry=x\n" {
			t.Errorf(".npmrc, granted by name, = %q, want the command's", got)
		}
		if got := readFile(t, filepath.Join(home, ".config/fish/config.fish")); got != "ok\n" {
			t.Errorf(".config/fish/config.fish, granted by name, = %q, want the command's", got)
		}
		if got := readFile(t, filepath.Join(home, ".bashrc")); got != homeFiles[".bashrc"] {
			t.Errorf(".bashrc changed: %q", got)
		}
	})
}

// TestHomeSSHKeysMasked: private keys in ~/.ssh are unreadable in the
// default sandbox with $HOME as the work dir, and through a read grant of
// the home folder; public files stay readable.
func TestHomeSSHKeysMasked(t *testing.T) {
	for _, tc := range []struct{ name, grant string }{{"workdir", ""}, {"read-grant", "$HOME/**"}} {
		t.Run(tc.name, func(t *testing.T) {
			users(t, func(t *testing.T, u user) {
				attack(t, "persistence", "read ~/.ssh private keys ("+tc.name+")")
				home := fakeHome(t, u)
				secrets := map[string]string{".ssh/id_ed25519": token("ED25519"), ".ssh/id_rsa": token("RSA"), ".ssh/work_key": token("WORK"), ".ssh/keys/deploy": token("DEPLOY")}
				for name, s := range secrets {
					writeFile(t, filepath.Join(home, name), "-----BEGIN OPENSSH PRIVATE KEY-----\n"+s+"\n", 0o600)
				}
				pub := token("PUB")
				writeFile(t, filepath.Join(home, ".ssh/id_ed25519.pub"), pub+"\n", 0o644)
				own(t, u, home)
				work, skills := home, []string(nil)
				if tc.grant != "" {
					work = newDir(t, u, "work")
					skills = []string{writeSkill(t, newDir(t, asSelf, "skill"), "reader", "  fs:\n    read: [\""+tc.grant+"\"]\n    write: [\"$WORK_DIR/**\"]\n")}
				}
				args := []string{"exec", "--work-dir", work}
				for _, s := range skills {
					args = append(args, "--skill", s)
				}
				script := `cd "$HOME/.ssh"; cat id_ed25519 id_rsa work_key keys/deploy id_ed25519.pub config; cp id_rsa /tmp/k && cat /tmp/k
ln id_rsa ` + work + `/k 2>/dev/null && cat ` + work + `/k; tar cf - . 2>/dev/null | od -c | head -50; cat /proc/self/mountinfo >/dev/null; echo ` + attackDone
				r := u.run(t, runOpts{args: append(args, "--", "sh", "-c", script), dir: work, env: homeEnv(home)})
				if !strings.Contains(r.stdout, attackDone) {
					t.Fatalf("the script did not run to its end:\n%s", r)
				}
				for name, s := range secrets {
					noSecret(t, r, s, name)
				}
				if !strings.Contains(r.stdout, pub) || !strings.Contains(r.stdout, "Host *") {
					t.Errorf("the public key and ssh config should stay readable:\n%s", r)
				}
			})
		})
	}
}

// TestHomeSkillsAndPolicyReadOnly: the skill in the repository being
// worked on and the policy files in use cannot be changed by the run they
// govern; a global policy file that does not exist must not appear.
func TestHomeSkillsAndPolicyReadOnly(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "edit the active SKILL.md, its folder, and the policy files from inside the run")
		// A skill whose SKILL.md is at the top of the work dir itself:
		// the work dir is named after it, as the Agent Skills format
		// requires of a skill's folder.
		work := filepath.Join(newDir(t, u, "repo"), "top")
		if err := os.Mkdir(work, 0o755); err != nil {
			t.Fatal(err)
		}
		sk := writeSkill(t, filepath.Join(work, "skills"), "local", "  fs:\n    write: [\"$WORK_DIR/**\"]\n")
		writeFile(t, filepath.Join(sk, "scripts/run.sh"), "echo hi\n", 0o755)
		writeFile(t, filepath.Join(work, "SKILL.md"), "---\nname: top\ndescription: the repository's own skill\n---\n", 0o644)
		pol := filepath.Join(work, "corral-policy.yaml")
		writeFile(t, pol, "permissions:\n  deny:\n    - {command: \"git push\"}\n", 0o644)
		global := filepath.Join(work, "global-policy.yaml") // missing: the run must not create it
		own(t, u, work)
		before := snapshot(t, work)
		r := runScriptArgs(t, u, work, nil, []string{"--skill", sk, "--skill", work, "--policy", pol, "--global-policy", global, "--confirmed"}, `
echo evil >> skills/local/SKILL.md; echo evil > skills/local/scripts/run.sh; echo evil > skills/local/new.sh
mv skills/local skills/local.old; mv skills proj-skills; rm -rf skills/local
printf -- '---\nname: local\n---\n' > /tmp/s && mv -f /tmp/s skills/local/SKILL.md
ln -sfn /tmp skills/local/scripts
echo evil >> SKILL.md; mv SKILL.md old.md; ln -sf /etc/hostname SKILL.md
echo 'permissions: {allow: [{command: "*"}]}' > corral-policy.yaml; mv corral-policy.yaml p.old
echo 'permissions: {allow: [{command: "*"}]}' > global-policy.yaml
mkdir -p out && echo fine > out/ok
`)
		got := checkHome(t, work, before, []string{"out"}, r)
		checkQuarantined(t, got, []string{"global-policy.yaml"})
		if readFile(t, filepath.Join(work, "out/ok")) != "fine\n" {
			t.Errorf("the rest of the work dir should stay writable")
		}
	})
}

// runScriptArgs is runScript with more flags for corral exec, and env
// (nil: the default).
func runScriptArgs(t *testing.T, u user, work string, env, flags []string, script string) result {
	t.Helper()
	writeFile(t, filepath.Join(work, "attack.sh"), script+"\necho "+attackDone+"\n", 0o644)
	own(t, u, filepath.Join(work, "attack.sh"))
	args := append(append([]string{"exec", "--work-dir", work}, flags...), "--", "sh", "attack.sh")
	r := u.run(t, runOpts{args: args, dir: work, env: env})
	if !strings.Contains(r.stdout, attackDone) {
		t.Fatalf("the attack script did not run to its end:\n%s", r)
	}
	return r
}

// TestHomeExplainListsProtected: explain prints the protected-path list
// and, with the home folder as the work dir, what it would quarantine.
func TestHomeExplainListsProtected(t *testing.T) {
	namespacesOnly(t, "read-only binds in a writable home (explain shows the landlock tier's refusal instead)")
	home := fakeHome(t, asSelf)
	r := asSelf.run(t, runOpts{args: []string{"explain", "--work-dir", home}, dir: home, env: homeEnv(home)})
	for _, want := range []string{"protected paths:", "~/.config/fish/", "~/.local/bin/", "<root>/.bashrc", "<root>/.vscode/", "THE HOME FOLDER"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain does not show %q:\n%s", want, r)
		}
	}
	r = asSelf.run(t, runOpts{args: []string{"explain", "--json", "--work-dir", home}, dir: home, env: homeEnv(home)})
	var x struct {
		Protected []struct{ Path string } `json:"protected_paths"`
		Plan      struct {
			Quarantine []struct{ Path string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &x); err != nil {
		t.Fatalf("%v:\n%s", err, r)
	}
	if len(x.Protected) < 50 || !slices.ContainsFunc(x.Plan.Quarantine, func(q struct{ Path string }) bool { return q.Path == filepath.Join(home, ".zlogin") }) {
		t.Errorf("explain --json: %d protected paths, quarantine %v", len(x.Protected), x.Plan.Quarantine)
	}
}

// TestHomeDotfilesSymlinks: a home folder managed with symlinks (stow):
// ~/.bashrc and ~/.config lead into ~/dotfiles. The targets stay
// read-only, and a link the command replaces, or a protected path it
// creates where a link leads, is quarantined.
func TestHomeDotfilesSymlinks(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "write through, replace and create below the dotfiles symlinks of a stow-managed home")
		home := newDir(t, u, "home")
		writeFile(t, filepath.Join(home, "dotfiles/bashrc"), "# bashrc\n", 0o644)
		writeFile(t, filepath.Join(home, "dotfiles/config/fish/config.fish"), "# fish\n", 0o644)
		writeFile(t, filepath.Join(home, "dotfiles/zshrc"), "# zshrc\n", 0o644)
		writeFile(t, filepath.Join(home, "dotfiles/local/share/README"), "no protected path in here\n", 0o644)
		for link, target := range map[string]string{".bashrc": "dotfiles/bashrc", ".config": "dotfiles/config", ".zshrc": "dotfiles/zshrc", ".local": "dotfiles/local"} {
			if err := os.Symlink(target, filepath.Join(home, link)); err != nil {
				t.Fatal(err)
			}
		}
		own(t, u, home)
		before := snapshot(t, home)
		r := runScriptArgs(t, u, home, homeEnv(home), nil, `
echo evil >> dotfiles/bashrc; echo evil >> .bashrc; echo evil >> dotfiles/config/fish/config.fish
mkdir -p .config/systemd/user && echo '[Unit]' > .config/systemd/user/evil.service
mkdir -p dotfiles/config/autostart && echo evil > dotfiles/config/autostart/evil.desktop
rm -f .zshrc && echo evil > .zshrc
mv .config cfg.old; mkdir -p .config/fish && echo evil > .config/fish/config.fish
mv .local local.old; mkdir -p .local/bin && echo evil > .local/bin/ls
`)
		// The command may remove or rename the links themselves (they sit
		// in a writable folder); what it puts in their place is
		// quarantined.
		delete(before, ".zshrc")
		delete(before, ".config")
		delete(before, ".local")
		got := checkHome(t, home, before, []string{"cfg.old", "local.old"}, r)
		checkQuarantined(t, got, []string{"dotfiles/config/systemd", "dotfiles/config/autostart", ".zshrc", ".config", ".local"})
	})
}

// TestHomeLinkCannotBeFollowed: ~/.bashrc is a stow-style symlink at
// launch; the command re-points it where corral cannot follow it (a path
// longer than PATH_MAX through relative links, which the kernel resolves
// one link at a time; a missing file; a loop). Each is taken as
// re-pointed and quarantined, with a warning.
func TestHomeLinkCannotBeFollowed(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"longer than PATH_MAX", `
n=$(printf "%0200d" 0); rel=""; for i in $(seq 15); do rel="$rel$n/"; done
mkdir -p "$rel" && (cd "$rel" && mkdir -p "$rel" && echo evil > "$rel/evil" && ln -s "${rel}evil" L2)
rm .bashrc && ln -s "${rel}L2" .bashrc`},
		{"missing target", `rm .bashrc && ln -s nowhere/bashrc .bashrc`},
		{"loop", `rm .bashrc && ln -s .bashrc .bashrc`},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			users(t, func(t *testing.T, u user) {
				attack(t, "persistence", "re-point a protected symlink where corral cannot follow it: "+tc.name)
				home := newDir(t, u, "home")
				writeFile(t, filepath.Join(home, "dotfiles/bashrc"), "# bashrc\n", 0o644)
				if err := os.Symlink("dotfiles/bashrc", filepath.Join(home, ".bashrc")); err != nil {
					t.Fatal(err)
				}
				own(t, u, home)
				r := runScriptArgs(t, u, home, homeEnv(home), nil, tc.script)
				if _, err := os.Lstat(filepath.Join(home, ".bashrc")); err == nil {
					t.Errorf("~/.bashrc, re-pointed where corral cannot follow it, is still there:\n%s", r)
				}
				if !strings.Contains(r.stderr, "cannot follow") {
					t.Errorf("no warning that corral cannot follow ~/.bashrc:\n%s", r)
				}
			})
		})
	}
}

// TestHomeNewStartupFiles creates start-up files that run commands in
// tools other than shells (less, bash-completion, sqlite3, pdb, gh): each
// is quarantined.
func TestHomeNewStartupFiles(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "create ~/.lesskey, ~/.bash_completion, ~/.sqliterc, ~/.pdbrc, gh aliases and bash completions")
		home := newDir(t, u, "home")
		writeFile(t, filepath.Join(home, ".config/README"), "configs\n", 0o644)
		own(t, u, home)
		created := []string{".lesskey", ".config/lesskey", ".bash_completion", ".sqliterc", ".pdbrc", ".config/gh", ".local/share/bash-completion"}
		r := runScriptArgs(t, u, home, homeEnv(home), nil, `
printf '#env\nLESSOPEN=|touch /tmp/x %%s\n' > .lesskey; cp .lesskey .config/lesskey
echo 'touch /tmp/x' > .bash_completion; echo '.shell touch /tmp/x' > .sqliterc; echo '!import os' > .pdbrc
mkdir -p .config/gh && echo 'aliases: {co: "!touch /tmp/x"}' > .config/gh/config.yml
mkdir -p .local/share/bash-completion/completions && echo 'touch /tmp/x' > .local/share/bash-completion/completions/git`)
		for _, p := range created {
			if _, err := os.Lstat(filepath.Join(home, p)); err == nil {
				t.Errorf("%s, created by the command, is still there:\n%s", p, r)
			}
		}
	})
}

// TestHomeUnsearchableParent creates a missing protected path, then takes
// the search right off the folder that holds it: the quarantine still
// finds and moves it (the owner would chmod the folder back later).
func TestHomeUnsearchableParent(t *testing.T) {
	for _, mode := range []string{"600", "000", "100"} {
		t.Run(mode, func(t *testing.T) {
			users(t, func(t *testing.T, u user) {
				attack(t, "persistence", "create a protected path, then chmod "+mode+" the folder holding it")
				home := newDir(t, u, "home")
				writeFile(t, filepath.Join(home, ".config/README"), "configs\n", 0o644)
				own(t, u, home)
				r := runScriptArgs(t, u, home, homeEnv(home), nil, `
mkdir -p .config/autostart && echo evil > .config/autostart/e.desktop && mkdir -p .x/.config && cp -r .config/autostart .x/
echo evil > .bash_completion && chmod `+mode+` .config`)
				os.Chmod(filepath.Join(home, ".config"), 0o755)
				if _, err := os.Lstat(filepath.Join(home, ".config/autostart")); err == nil {
					t.Errorf(".config/autostart, created by the command, is still there:\n%s", r)
				}
				if st, err := os.Stat(filepath.Join(home, ".config")); err != nil || !st.IsDir() {
					t.Errorf(".config is gone: %v", err)
				}
			})
		})
	}
}

// TestHomeMoreStartupFiles: the second review's files that host tools run
// from a writable home: less's compiled key file, go's env file (GOFLAGS
// -toolexec), rustup's cargo env sourced by shells, docker CLI plugins,
// gpg's agent program, sensible-editor's choice and npm init's script.
// Existing ones stay read-only; created ones are quarantined.
func TestHomeMoreStartupFiles(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "write ~/.less, ~/.config/go/env, ~/.cargo/env, docker plugins, ~/.gnupg, ~/.selected_editor, ~/.npm-init.js")
		home := newDir(t, u, "home")
		writeFile(t, filepath.Join(home, ".config/README"), "configs\n", 0o644)
		writeFile(t, filepath.Join(home, ".cargo/env"), "export PATH=\"$HOME/.cargo/bin:$PATH\"\n", 0o644)
		writeFile(t, filepath.Join(home, ".gnupg/gpg.conf"), "keyid-format long\n", 0o600)
		own(t, u, home, filepath.Join(home, ".cargo"), filepath.Join(home, ".cargo/env"), filepath.Join(home, ".gnupg"), filepath.Join(home, ".gnupg/gpg.conf"))
		created := []string{".less", ".config/go/env", ".docker/cli-plugins", ".selected_editor", ".npm-init.js", ".fzf.bash", ".hgrc"}
		r := runScriptArgs(t, u, home, homeEnv(home), nil, `
echo 'touch /tmp/x' >> .cargo/env; echo 'agent-program /tmp/x' >> .gnupg/gpg.conf
printf 'x' > .less; mkdir -p .config/go && echo 'GOFLAGS=-toolexec=/tmp/x' > .config/go/env
mkdir -p .docker/cli-plugins && echo 'touch /tmp/x' > .docker/cli-plugins/docker-zz
echo 'touch /tmp/x' > .selected_editor; echo 'require("fs")' > .npm-init.js
echo 'touch /tmp/x' > .fzf.bash; printf '[hooks]\npre-commit = touch /tmp/x\n' > .hgrc`)
		for _, p := range created {
			if _, err := os.Lstat(filepath.Join(home, p)); err == nil {
				t.Errorf("%s, created by the command, is still there:\n%s", p, r)
			}
		}
		if got := readFile(t, filepath.Join(home, ".cargo/env")); strings.Contains(got, "touch") {
			t.Errorf("the command appended to ~/.cargo/env:\n%s", got)
		}
		if got := readFile(t, filepath.Join(home, ".gnupg/gpg.conf")); strings.Contains(got, "agent-program") {
			t.Errorf("the command appended to ~/.gnupg/gpg.conf:\n%s", got)
		}
	})
}

// TestHomePrivateWhenUngranted: with no grant on $HOME, the command gets
// a HOME it can write (tools write ~/.cache, ~/.npm, ~/.config as a
// matter of course, and failed where HOME did not exist), and nothing it
// writes there, startup files included, reaches the host's home.
func TestHomePrivateWhenUngranted(t *testing.T) {
	users(t, func(t *testing.T, u user) {
		attack(t, "persistence", "write ~/.bashrc, ~/.profile, ~/.gitconfig and ~/.config/git/config into a private HOME")
		// Not in /tmp, where the private /tmp would stand in for it.
		if !isRoot {
			t.Skip("needs a home folder outside /tmp: made in /home, as root")
		}
		home, err := os.MkdirTemp("/home", "corral-e2e-home-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		os.Chmod(home, 0o755)
		writeFile(t, filepath.Join(home, ".bashrc"), "# the user's\n", 0o644)
		own(t, u, home)
		work := newDir(t, u, "work")
		before := snapshot(t, home)
		r := runScriptArgs(t, u, work, homeEnv(home), nil, `
set -e
mkdir -p "$HOME/.cache/tool" "$HOME/.config/git"
echo cached > "$HOME/.cache/tool/x"; cat "$HOME/.cache/tool/x"
echo 'touch /tmp/pwned' > "$HOME/.bashrc"; echo 'touch /tmp/pwned' > "$HOME/.profile"
printf '[core]\n\tpager = touch /tmp/pwned\n' > "$HOME/.gitconfig"; cp "$HOME/.gitconfig" "$HOME/.config/git/config"
echo home="$HOME"`)
		if r.code != 0 || !strings.Contains(r.stdout, "cached") {
			t.Errorf("writing in HOME: exit %d, want 0:\n%s", r.code, r)
		}
		// corral keeps the private HOME's caches in ~/.cache/corral/homes
		// (docs/home.md): that, and nothing else, is new.
		got := snapshot(t, home)
		maps.DeleteFunc(got, func(rel, _ string) bool {
			return rel == ".cache" || rel == ".cache/corral" || strings.HasPrefix(rel, ".cache/corral/")
		})
		if !maps.Equal(before, got) {
			t.Errorf("the host's home changed:\nbefore %v\nafter  %v\n%s", before, got, r)
		}
		// (The landlock tier names the store by XDG_CACHE_HOME; this
		// script writes $HOME/.cache itself.)
		stores, _ := filepath.Glob(filepath.Join(home, ".cache/corral/homes/*/cache/tool/x"))
		if len(stores) != 1 && e2eTier != "landlock" {
			t.Errorf("the command's ~/.cache/tool/x is not in the home store: %v", stores)
		}
		// A write grant in HOME whose folder is missing: exec makes the
		// folder, so what the command writes there reaches the host
		// rather than the private HOME (where it would be lost without
		// a word); a missing file grant keeps HOME as it was, so a write
		// there fails for all to see.
		sk := writeSkill(t, newDir(t, asSelf, "skills"), "writes-home", "  fs:\n    write: [\"$HOME/out/**\", \"$HOME/log.txt\"]\n")
		r = u.run(t, runOpts{args: []string{"exec", "--work-dir", work, "--skill", sk, "--", "sh", "-c", "echo result > " + home + "/out/r.txt; echo log > " + home + "/log.txt"}, dir: work, env: homeEnv(home)})
		if got, _ := os.ReadFile(filepath.Join(home, "out/r.txt")); string(got) != "result\n" || r.code == 0 || !strings.Contains(r.stderr, "log.txt") {
			t.Errorf("write grants in HOME: out/r.txt is %q, exit %d; want the file on the host and the write to the missing log.txt failing:\n%s", got, r.code, r)
		}
	})
}
