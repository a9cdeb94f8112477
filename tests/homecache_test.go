//go:build linux

package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHomeCachesPersist: the private HOME's caches (~/.cache, ~/go/pkg/mod,
// ~/.npm, ...) are kept between runs with the same work dir and skills,
// and nothing else of it is: shell start-up files and tool configs start
// empty every time. Another work dir, or --fresh-home, starts with empty
// caches. The store is this user's alone, even after the command opened
// its cache folder to everybody (issue 28, item 3).
func TestHomeCachesPersist(t *testing.T) {
	t.Parallel()
	attack(t, "persistence", "plant shell start-up files and configs in the private HOME for a later run")
	users(t, func(t *testing.T, u user) {
		home := newDir(t, u, "home")
		work := newDir(t, u, "work")
		other := newDir(t, u, "other")
		skills := newDir(t, u, "skills")
		sk := writeSkill(t, skills, "coder", "  fs:\n    write: [\"$WORK_DIR/**\"]\n")
		env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=" + home}
		report := filepath.Join(newDir(t, u, "report"), "r.json")
		run := func(dir string, script string, flags ...string) result {
			args := append([]string{"exec", "--quiet", "--report", report, "--work-dir", dir, "--skill", sk}, flags...)
			return u.run(t, runOpts{args: append(args, "--", "bash", "-c", script), dir: dir, env: env})
		}
		// Where the tools look: the landlock tier names the caches by
		// their variables, the namespaces tier binds them in place.
		dirs := `cache=${XDG_CACHE_HOME:-$HOME/.cache} mod=${GOMODCACHE:-$HOME/go/pkg/mod} npm=${npm_config_cache:-$HOME/.npm}
`
		plant := dirs + `set -e
echo kept > $cache/marker
mkdir -p $mod/example.com ~/.cargo ~/.config/git
echo mod > $mod/example.com/m
echo npm > $npm/n
echo 'echo PLANTED-PROFILE' > ~/.profile
echo 'echo PLANTED-BASHRC' > ~/.bashrc
echo 'echo PLANTED-BASH-PROFILE' > ~/.bash_profile
printf '[core]\n\tfsmonitor = echo PLANTED-GIT\n' > ~/.config/git/config
printf '[build]\nrustc-wrapper = "/bin/false"\n' > ~/.cargo/config.toml
chmod 0777 $cache
`
		if r := run(work, plant); r.code != 0 {
			t.Fatalf("planting:\n%s", r)
		}
		var rep struct {
			HomeStore string `json:"home_store"`
		}
		data, _ := os.ReadFile(report)
		if err := json.Unmarshal(data, &rep); err != nil || rep.HomeStore == "" || !strings.HasPrefix(rep.HomeStore, filepath.Join(home, ".cache", "corral", "homes")+"/") {
			t.Fatalf("the report's home_store %q (%v), want a folder in %s/.cache/corral/homes", rep.HomeStore, err, home)
		}
		look := dirs + `cat $cache/marker $mod/example.com/m $npm/n 2>&1
ls -A ~ | tr '\n' ' '; echo
ls ~/.config ~/.cargo 2>&1 | tr '\n' ' '; echo
git config --global --get core.fsmonitor || echo no-fsmonitor`
		r := run(work, look)
		for _, want := range []string{"kept\n", "mod\n", "npm\n", "no-fsmonitor"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("the second run in the same work dir lacks %q:\n%s", want, r)
			}
		}
		for _, planted := range []string{".profile", ".bashrc", ".bash_profile", "config.toml", "PLANTED"} {
			if strings.Contains(r.stdout, planted) {
				t.Errorf("%s persisted into the next run's HOME:\n%s", planted, r)
			}
		}
		if r := run(work, "bash -lc 'echo login-shell-ran'"); strings.Contains(r.stdout, "PLANTED") || !strings.Contains(r.stdout, "login-shell-ran") {
			t.Errorf("a login shell of the next run:\n%s", r)
		}
		for _, dir := range []string{rep.HomeStore, filepath.Join(rep.HomeStore, "cache"), filepath.Dir(rep.HomeStore)} {
			if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, mode %v; want 0700 (the command opened the cache folder to everybody)", dir, err, st.Mode())
			}
		}
		if r := run(other, look); strings.Contains(r.stdout, "kept") || strings.Contains(r.stdout, "mod\n") {
			t.Errorf("another work dir sees this one's caches:\n%s", r)
		}
		if r := run(work, look, "--fresh-home"); strings.Contains(r.stdout, "kept") {
			t.Errorf("--fresh-home sees the kept caches:\n%s", r)
		}
		data, _ = os.ReadFile(report)
		rep.HomeStore = "unread"
		if err := json.Unmarshal(data, &rep); err != nil || rep.HomeStore != "" {
			t.Errorf("--fresh-home: the report's home_store is %q (%v), want \"\"", rep.HomeStore, err)
		}
		if r := run(work, "echo $GOTOOLCHAIN"); r.stdout != "local\n" {
			t.Errorf("GOTOOLCHAIN with kept caches: %q, want local (a toolchain in the kept module cache would run unchecked)", r.stdout)
		}
		// Other permissions, same skill folder and work dir: another store
		// (what a run leaves in its caches never acts with more rights).
		writeSkill(t, skills, "coder", "  fs:\n    write: [\"$WORK_DIR/**\"]\n  network:\n    allow: [\"api.test:443\"]\n")
		if r := run(work, look); strings.Contains(r.stdout, "kept") {
			t.Errorf("a run with other permissions sees the caches:\n%s", r)
		}
	})
}

// TestHomeGitIdentity: the private HOME has the host's git identity, and
// nothing else of the host's git config (no fsmonitor, no alias, no
// include), so git commit works in a fresh repository; the identity is
// read-only or gone after the run.
func TestHomeGitIdentity(t *testing.T) {
	t.Parallel()
	attack(t, "persistence", "carry the host's git config that runs programs into the sandbox")
	users(t, func(t *testing.T, u user) {
		home := newDir(t, u, "home")
		writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Ada Tester\n\temail = ada@example.test\n[core]\n\tfsmonitor = echo HOST-FSMONITOR\n[alias]\n\tst = !echo HOST-ALIAS\n[include]\n\tpath = /etc/passwd\n[init]\n\tdefaultBranch = trunk\n", 0o644)
		own(t, u, filepath.Join(home, ".gitconfig"))
		work := newDir(t, u, "work")
		skills := newDir(t, u, "skills")
		sk := writeSkill(t, skills, "coder", "  fs:\n    write: [\"$WORK_DIR/**\"]\n")
		env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=" + home}
		script := `set -e
git init -q r && cd r
git commit -q --allow-empty -m first
git log --format='%an <%ae>'
git branch --show-current
git config --global --list
git config --global user.name Other 2>/dev/null || echo not-changed
`
		r := u.run(t, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--skill", sk, "--", "bash", "-c", script}, dir: work, env: env})
		if r.code != 0 || !strings.Contains(r.stdout, "Ada Tester <ada@example.test>\n") || !strings.Contains(r.stdout, "trunk\n") {
			t.Errorf("git commit with the host's identity:\n%s", r)
		}
		for _, bad := range []string{"fsmonitor", "alias", "include", "HOST-"} {
			if strings.Contains(r.stdout+r.stderr, bad) {
				t.Errorf("%s of the host's git config reached the sandbox:\n%s", bad, r)
			}
		}
		data, _ := os.ReadFile(filepath.Join(home, ".gitconfig"))
		if !strings.Contains(string(data), "Ada") || strings.Contains(string(data), "Other") {
			t.Errorf("the host's ~/.gitconfig changed: %s", data)
		}
	})
}

// TestDataDirExported: a skill whose grants reach its $DATA_DIR gets the
// folder's path as $DATA_DIR; with two such skills each gets
// DATA_DIR_<NAME>.
func TestDataDirExported(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		data := newDir(t, u, "data")
		skills := newDir(t, u, "skills")
		one := writeSkill(t, skills, "notes", "  fs:\n    write: [\"$DATA_DIR/**\"]\n")
		two := writeSkill(t, skills, "web-cache", "  fs:\n    read: [\"$DATA_DIR/**\"]\n")
		run := func(sks ...string) result {
			args := []string{"exec", "--quiet", "--work-dir", work, "--data-dir", data}
			for _, s := range sks {
				args = append(args, "--skill", s)
			}
			return u.run(t, runOpts{args: append(args, "--", "sh", "-c", `env | grep ^DATA_DIR | sort; echo x > "$DATA_DIR/f" && cat "$DATA_DIR/f"`), dir: work})
		}
		if r := run(one); r.code != 0 || !strings.Contains(r.stdout, "DATA_DIR="+filepath.Join(data, "notes")+"\n") || !strings.HasSuffix(r.stdout, "x\n") {
			t.Errorf("one skill:\n%s", r)
		}
		r := run(one, two)
		if !strings.Contains(r.stdout, "DATA_DIR_NOTES="+filepath.Join(data, "notes")+"\n") || !strings.Contains(r.stdout, "DATA_DIR_WEB_CACHE="+filepath.Join(data, "web-cache")+"\n") || strings.Contains(r.stdout, "\nDATA_DIR=") {
			t.Errorf("two skills:\n%s", r)
		}
	})
}

// TestCABundleVariables: a CA bundle variable of the host passes into the
// sandbox with its file readable, wherever the file is; one that names a
// file with a private key, or a home folder, passes nothing and grants
// nothing.
func TestCABundleVariables(t *testing.T) {
	t.Parallel()
	attack(t, "filesystem", "read a secret through a CA bundle variable")
	users(t, func(t *testing.T, u user) {
		work := newDir(t, u, "work")
		// Outside /tmp, which the namespaces tier replaces with its own:
		// in / as root, else in the home folder of the user the tests
		// run as (not the sandbox's HOME below).
		certs, err := os.MkdirTemp("/", "corral-e2e-certs-")
		if err != nil {
			if h, herr := os.UserHomeDir(); herr == nil && !strings.HasPrefix(h, "/tmp") {
				certs, err = os.MkdirTemp(h, "corral-e2e-certs-")
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(certs) })
		os.Chmod(certs, 0o755)
		home := newDir(t, u, "home")
		ca := filepath.Join(certs, "corp-root.pem")
		writeFile(t, ca, "-----BEGIN CERTIFICATE-----\nMIIBcorp\n-----END CERTIFICATE-----\n", 0o644)
		key := filepath.Join(certs, "client.pem")
		writeFile(t, key, "-----BEGIN CERTIFICATE-----\nMIIBcli\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nSECRET-KEY\n-----END PRIVATE KEY-----\n", 0o644)
		writeFile(t, filepath.Join(home, "notes.txt"), "SECRET-HOME\n", 0o644)
		// A folder of *.pem files, one of them a key: not granted.
		keys := filepath.Join(certs, "keys")
		writeFile(t, filepath.Join(keys, "ca.pem"), "-----BEGIN CERTIFICATE-----\nMIIBca\n-----END CERTIFICATE-----\n", 0o644)
		writeFile(t, filepath.Join(keys, "privkey.pem"), "-----BEGIN PRIVATE KEY-----\nSECRET-DIR-KEY\n-----END PRIVATE KEY-----\n", 0o644)
		env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=" + home,
			"NODE_EXTRA_CA_CERTS=" + ca, "REQUESTS_CA_BUNDLE=" + key, "SSL_CERT_DIR=" + home + ":" + keys}
		script := `echo "node=$NODE_EXTRA_CA_CERTS req=$REQUESTS_CA_BUNDLE dir=$SSL_CERT_DIR"; cat "` + ca + `"; cat "` + key + `" "` + home + `/notes.txt" "` + keys + `/privkey.pem" 2>&1`
		r := u.run(t, runOpts{args: []string{"exec", "--quiet", "--work-dir", work, "--", "sh", "-c", script}, dir: work, env: env})
		if !strings.Contains(r.stdout, "node="+ca+" req= dir=\n") || !strings.Contains(r.stdout, "MIIBcorp") {
			t.Errorf("NODE_EXTRA_CA_CERTS and its file:\n%s", r)
		}
		if strings.Contains(r.stdout, "SECRET") {
			t.Errorf("a CA variable opened a secret:\n%s", r)
		}
		c := u.run(t, runOpts{args: []string{"check", "--work-dir", work, "read", ca}, dir: work, env: env})
		if c.code != 0 {
			t.Errorf("check read of the CA file should allow, as exec does:\n%s", c)
		}
		c = u.run(t, runOpts{args: []string{"check", "--work-dir", work, "read", key}, dir: work, env: env})
		if c.code == 0 {
			t.Errorf("check read of the key file should deny, as exec does:\n%s", c)
		}
	})
}
