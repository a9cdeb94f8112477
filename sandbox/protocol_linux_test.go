package sandbox

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox/stage"
)

// TestMountKindLetters: every MountKind has a letter of its own in
// protocol.h (a new kind without one would be encoded as NUL).
func TestMountKindLetters(t *testing.T) {
	kinds := []MountKind{MountTmpfs, MountProc, MountBind, MountDev, MountSymlnk, MountDir, MountCopy, MountFile, MountMask}
	var letters []byte
	for _, k := range kinds {
		l, ok := mountKinds[k]
		if !ok || l == 0 {
			t.Errorf("mount kind %s has no letter in protocol.h", k)
		}
		letters = append(letters, l)
	}
	if len(mountKinds) != len(kinds) || len(slices.Compact(slices.Sorted(slices.Values(letters)))) != len(kinds) {
		t.Errorf("mount kind letters repeat or are not one per kind: %v", mountKinds)
	}
}

// TestForwardedSignalsOneList: Linux reads the forwarded signals from
// protocol.h; macOS's launcher, which has no C, keeps its own list in
// run_darwin.go, which must name the same signals in the same order.
func TestForwardedSignalsOneList(t *testing.T) {
	var fromC []string
	for _, s := range stage.Forwarded {
		fromC = append(fromC, unix.SignalName(s.(syscall.Signal)))
	}
	if len(fromC) < 7 || !slices.Contains(fromC, "SIGINT") || !slices.Contains(fromC, "SIGWINCH") {
		t.Fatalf("forwarded from protocol.h: %v", fromC)
	}
	src, err := os.ReadFile("run_darwin.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`var forwarded = \[\]os\.Signal\{([^}]*)\}`).FindSubmatch(src)
	if m == nil {
		t.Fatal("run_darwin.go has no forwarded list")
	}
	var darwin []string
	for _, f := range strings.Split(string(m[1]), ",") {
		darwin = append(darwin, strings.TrimPrefix(strings.TrimSpace(f), "syscall."))
	}
	if !slices.Equal(fromC, darwin) {
		t.Errorf("forwarded signals: protocol.h %v, run_darwin.go %v", fromC, darwin)
	}
}
