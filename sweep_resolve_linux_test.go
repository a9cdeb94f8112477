package corral

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSweepResolve follows pointers as the kernel does: a symlink before
// the ".." after it, relative links in chains, and refuses a loop and a
// symlink to an absolute path made during the run inside a root.
func TestSweepResolve(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"s/t", "s/c", "r/.git", "u/v/t", "u/c"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.Symlink("../../s/t", filepath.Join(root, "r/.git/sl"))
	os.Symlink("v/t", filepath.Join(root, "u/l1"))
	os.Symlink("../../u/l1", filepath.Join(root, "r/.git/l2"))
	os.Symlink(filepath.Join(root, "s/t"), filepath.Join(root, "r/.git/abs"))
	os.Symlink("loop", filepath.Join(root, "r/.git/loop"))
	s := sweepGit(nil, nil, "", sweepStart(), false) // an empty sweep: its clock is now
	s.roots = []string{root}
	s.since.Sec -= 60 // everything made above counts as changed
	gfd, err := unix.Open(filepath.Join(root, "r/.git"), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(gfd)
	for p, want := range map[string]string{
		"sl/../c":          root + "/s/c",
		"l2/../../c":       root + "/u/c",
		"../../s/c/":       root + "/s/c",
		"../../s/t/../c/.": root + "/s/c",
		root + "/s/c":      root + "/s/c",
	} {
		var restore []func()
		fd, real, last, err := s.resolve(gfd, p, &restore)
		if err != nil {
			t.Errorf("%q: %v", p, err)
			continue
		}
		unix.Close(fd)
		if got := filepath.Join(real, last); got != want {
			t.Errorf("%q: resolved to %s, want %s", p, got, want)
		}
	}
	for p, want := range map[string]error{"abs/../c": errAbsLink, "loop/x": unix.ELOOP, "/proc/self/cwd/x": errProcLink, "/dev/fd/3": errProcLink} {
		var restore []func()
		_, _, _, err := s.resolve(gfd, p, &restore)
		if !errors.Is(err, want) {
			t.Errorf("%q: err %v, want %v", p, err, want)
		}
		var re *resolveErr
		if errors.As(err, &re) {
			unix.Close(re.fd)
		}
	}
	if got, nul := cString([]byte("../../s/c\x00junk")); got != "../../s/c" || !nul {
		t.Errorf("cString: %q %v", got, nul)
	}
}

// TestSweepGitFIFO: a .git the command made that is neither a file nor a
// folder is quarantined as what it is.
func TestSweepGitFIFO(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	since := sweepStart()
	since.Sec -= 60
	if err := unix.Mkfifo(filepath.Join(root, "sub/.git"), 0o644); err != nil {
		t.Skip(err)
	}
	s := sweepGit([]string{root}, nil, "", since, false)
	if len(s.Moved) != 1 || s.Moved[0].Why != "a .git FIFO the command made" {
		t.Fatalf("moved %+v, errors %v", s.Moved, s.Errs)
	}
}

// TestSweepGoesOnPastAMovedFolder: another sandbox on the same folders
// swaps two deep chains (past the walk's open descriptors, so it reopens
// folders through "..") while the sweep runs; the walk of those chains
// fails, but the rest of the root is still swept: the repositories beside
// them have their hooks quarantined.
func TestSweepGoesOnPastAMovedFolder(t *testing.T) {
	root := t.TempDir()
	since := sweepStart()
	for _, side := range []string{"A", "B"} {
		p := filepath.Join(root, "q", side)
		for i := 0; i < maxSweepFds+20; i++ {
			p = filepath.Join(p, "c")
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []string{"r0", "r1", "zz"} {
		hooks := filepath.Join(root, r, ".git", "hooks")
		os.MkdirAll(hooks, 0o755)
		os.WriteFile(filepath.Join(root, r, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, b := filepath.Join(root, "q", "A", "c"), filepath.Join(root, "q", "B", "c")
		for {
			select {
			case <-stop:
				return
			default:
				unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
			}
		}
	}()
	s := sweepGit([]string{root}, nil, "", since, false)
	close(stop)
	<-done
	for _, r := range []string{"r0", "r1", "zz"} {
		if exists(filepath.Join(root, r, ".git", "hooks", "pre-commit")) {
			t.Errorf("%s's hook was not quarantined (errors: %v)", r, s.Errs)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
