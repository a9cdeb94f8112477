//go:build linux

package tests

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// shellQuote quotes argv for sh.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// inTerminal runs corral with args inside a real pseudo-terminal made by
// util-linux script(1), which becomes corral's controlling terminal and
// stdin. It skips when script is missing or gives no terminal.
func inTerminal(t *testing.T, u user, work string, args ...string) string {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("util-linux script(1) is not installed: no way to give corral a real terminal")
	}
	run := func(argv []string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, "-qec", shellQuote(argv), "/dev/null")
		cmd.Dir = work
		cmd.Env = append(defaultEnv(), "TERM=xterm")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	// Control: on the host, under script, the probe has a controlling
	// terminal.
	if out := run([]string{probeBin, "tty"}); !regexp.MustCompile(`OK tty_nr=[1-9]`).MatchString(out) {
		t.Skipf("script(1) did not give a controlling terminal (the probe on the host says %q)", strings.TrimSpace(out))
	}
	argv := append([]string{corralBin}, args...)
	if u.unpriv {
		argv = append([]string{setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups"}, argv...)
	}
	return run(argv)
}

// TestTermTIOCSTI pushes input into corral's real terminal with TIOCSTI,
// which would type commands into the user's shell after corral ends.
func TestTermTIOCSTI(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "terminal", "inject input with TIOCSTI")
		f := newFS(t, u)
		out := inTerminal(t, u, f.work, "exec", "--work-dir", f.work, "--", f.probe, "tiocsti")
		lines := probeLines(out)
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "ERR EPERM ") {
			t.Errorf("want TIOCSTI refused with EPERM:\n%s", out)
		}
	})
}

// TestTermNoControllingTerminal checks that the command has no
// controlling terminal even when corral has one: tty_nr is 0 and /dev/tty
// does not open.
func TestTermNoControllingTerminal(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		attack(t, "terminal", "use corral's controlling terminal")
		f := newFS(t, u)
		out := inTerminal(t, u, f.work, "exec", "--work-dir", f.work, "--", f.probe, "tty")
		noTTY := strings.Contains(out, "tty_nr=0") || e2eTier == "landlock" && strings.Contains(out, "tty_nr=?")
		if !noTTY || !strings.Contains(out, "ERR ENXIO") {
			t.Errorf("want tty_nr=0 and /dev/tty failing with ENXIO:\n%s", out)
		}
	})
}
