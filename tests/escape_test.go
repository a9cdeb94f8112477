//go:build linux && amd64

package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Attacks after published container and sandbox escapes.

// TestEscapeOverwriteLauncher tries CVE-2019-5736's move: PID 1 of the
// sandbox is corral's own binary (re-executed as the init), so writing
// through /proc/1/exe would replace corral on the host for every later run.
func TestEscapeOverwriteLauncher(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "privilege", "overwrite corral through /proc/1/exe (CVE-2019-5736)")
		before := fileHash(t, corralBin)
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, `
./probe write /proc/1/exe PWNED
./probe write /proc/1/root/proc/1/exe PWNED
for m in /proc/1/map_files/*; do ./probe write "$m" PWNED; done 2>/dev/null
./probe read /proc/1/exe
`)
		if strings.Contains(r.stdout, "OK write") {
			t.Errorf("a write through /proc/1 succeeded:\n%s", r)
		}
		if !bytes.Equal(before, fileHash(t, corralBin)) {
			t.Fatalf("corral's binary on the host changed")
		}
	})
}

// TestEscapeX32Syscalls calls unshare through the x32 ABI's numbers, the
// classic way around a seccomp filter that checks x86_64 numbers only.
func TestEscapeX32Syscalls(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "privilege", "unshare through the x32 system-call numbers")
		f := newFS(t, u)
		r := runScript(t, u, f.work, nil, "./probe unshare-x32 user; ./probe unshare-x32 mount\n")
		if strings.Contains(r.stdout, "OK unshare") {
			t.Errorf("an x32 unshare succeeded:\n%s", r)
		}
	})
}

func fileHash(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data)
	return h[:]
}

// TestEscapeInheritedFDs hands corral open files it did not ask for (fds
// 3 to 7, without close-on-exec), as a careless parent does: one of them
// is a secret outside every grant. None may reach the command.
func TestEscapeInheritedFDs(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	attack(t, "filesystem", "read a secret through a file descriptor corral inherited")
	f := newFS(t, asSelf)
	writeFile(t, filepath.Join(f.work, "attack.sh"), "for fd in 3 4 5 6 7; do cat <&$fd; done 2>/dev/null; ls /proc/self/fd\necho "+attackDone+"\n", 0o644)
	var extra []*os.File
	for range 5 {
		sf, err := os.Open(f.secret)
		if err != nil {
			t.Fatal(err)
		}
		defer sf.Close()
		extra = append(extra, sf)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := asSelf.command(ctx, runOpts{args: []string{"exec", "--work-dir", f.work, "--", "sh", "attack.sh"}, dir: f.work})
	cmd.ExtraFiles = extra
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), attackDone) {
		t.Fatalf("the script did not run to its end:\n%s", out)
	}
	if strings.Contains(string(out), f.tok) {
		t.Errorf("the command read the secret through an inherited fd:\n%s", out)
	}
}
