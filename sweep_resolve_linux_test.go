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
