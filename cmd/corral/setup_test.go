package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestApparmorProfile: the profile for a plain path is Ubuntu's pattern
// (bwrap-userns-restrict, runc): abi 4.0, unconfined, one userns rule.
func TestApparmorProfile(t *testing.T) {
	got, err := apparmorProfile("/usr/local/bin/corral")
	if err != nil {
		t.Fatal(err)
	}
	want := `# Written by "corral setup apparmor": lets the corral binary at
# /usr/local/bin/corral create user namespaces where AppArmor restricts them
# (sysctl kernel.apparmor_restrict_unprivileged_userns=1), and confines
# nothing else. Rerun the command after moving corral.
abi <abi/4.0>,
include <tunables/global>

profile corral /usr/local/bin/corral flags=(unconfined) {
  userns,

  # Site-specific additions and overrides. See local/README for details.
  include if exists <local/corral>
}
`
	if got != want {
		t.Errorf("profile:\n%s\nwant:\n%s", got, want)
	}
	for _, ok := range []string{"/opt/corral-1.2/bin/corral", "/usr/bin/corral+x", "/srv/~me/corral_2"} {
		if _, err := apparmorProfile(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}

// TestApparmorProfileRefusesPaths: AppArmor's globbing characters,
// variables, quotes, comments, spaces and controls, and paths that are
// not absolute and clean, are refused rather than quoted.
func TestApparmorProfileRefusesPaths(t *testing.T) {
	for _, bad := range []string{
		"/opt/co rral", "/opt/a*b", "/opt/a?b", "/opt/[ab]", "/opt/{a,b}", "/opt/^x",
		`/opt/"x`, "/opt/'x", "/opt/a\tb", "/opt/a\nb", "/opt/x\x01", "/opt/x\x7f",
		"/opt/@{HOME}/corral", "/opt/a#b", "/opt/a,b", `/opt/a\b`, "/opt/jürgen/corral", "/opt/a\u00a0b",
		"corral", "bin/corral", "/opt/../bin/corral", "/opt//corral", "/opt/bin/", "/",
	} {
		if p, err := apparmorProfile(bad); err == nil {
			t.Errorf("%q accepted:\n%s", bad, p)
		} else if !strings.HasPrefix(err.Error(), "refusing ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error is not one line starting with refusing: %q", bad, err)
		}
	}
}

// safeBinary is a binary that only root can replace (true, symbolic
// links resolved), for the runs that must get past the ownership check.
func safeBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true on PATH")
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		t.Fatal(err)
	}
	if err := checkBinaryOwners(p); err != nil {
		t.Skipf("no binary only root can replace to attach to on this host: %v", err)
	}
	return p
}

// TestSetupAppArmorWorldWritable: a binary in a folder anyone can write
// is refused by the check, by setup apparmor (125, one line), and gets
// a WARNING comment from --print.
func TestSetupAppArmorWorldWritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "w")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "corral")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, _ = filepath.EvalSymlinks(bin) // /tmp may be a link (macOS)
	err := checkBinaryOwners(bin)
	switch {
	case err == nil:
		t.Fatal("a binary in a world-writable folder passed")
	case os.Geteuid() == 0 && err.Error() != filepath.Dir(bin)+" is writable by its group or by others (drwxrwxrwx)":
		t.Errorf("as root: %v", err)
	case os.Geteuid() != 0 && !strings.Contains(err.Error(), bin+" is owned by uid "):
		t.Errorf("as uid %d (the binary is the first offender): %v", os.Geteuid(), err)
	}

	fakeRoot(t)
	code, out, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", t.TempDir())
	if code != 125 || out != "" || !strings.HasPrefix(errOut, "corral setup: refusing to let "+bin+" create user namespaces: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("setup apparmor: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCaptured(t, "setup", "apparmor", "--print", "--path", bin)
	want, _ := apparmorProfile(bin)
	if code != 0 || !strings.HasPrefix(errOut, "corral setup: warning: refusing to let "+bin) || strings.Count(errOut, "\n") != 1 ||
		!strings.HasPrefix(out, "# WARNING: refusing to let "+bin) || !strings.HasSuffix(out, "\n"+want) || strings.Count(out, "WARNING") != 1 {
		t.Errorf("--print: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}

// TestSetupAppArmorNotRootOwned: a binary root does not own is refused,
// in a folder that is itself safe.
func TestSetupAppArmorNotRootOwned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the binary to 65534")
	}
	bin := filepath.Join(t.TempDir(), "corral")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(bin, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	bin, _ = filepath.EvalSymlinks(bin)
	if err := checkBinaryOwners(bin); err == nil || err.Error() != bin+" is owned by uid 65534, not root" {
		t.Errorf("got %v", err)
	}
	fakeRoot(t)
	if code, _, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", t.TempDir()); code != 125 || !strings.Contains(errOut, "owned by uid 65534, not root") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestSetupAppArmorPrint: --print writes the profile of --path (symbolic
// links resolved), or of the running binary, as any user.
func TestSetupAppArmorPrint(t *testing.T) {
	setupEuid = func() int { return 1000 }
	t.Cleanup(func() { setupEuid = os.Geteuid })
	bin := safeBinary(t)
	link := filepath.Join(t.TempDir(), "corral")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	want, err := apparmorProfile(bin)
	if err != nil {
		t.Skipf("this host's true has an odd path: %v", err)
	}
	for _, args := range [][]string{{"setup", "apparmor", "--print", "--path", link}, {"setup", "--print", "--path", bin, "apparmor"}} {
		if code, out, errOut := runCaptured(t, args...); code != 0 || out != want || errOut != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
	}
	// The test binary stands for corral: in a temporary folder, so with
	// the WARNING.
	exe, err := apparmorBinary("")
	if err != nil {
		t.Fatal(err)
	}
	if apparmorSafeChars(exe) != nil {
		t.Skipf("the test binary's path %q is refused for its characters", exe)
	}
	if code, out, _ := runCaptured(t, "setup", "apparmor", "--print"); code != 0 || !strings.Contains(out, "\nprofile corral "+exe+" flags=(unconfined) {\n") {
		t.Errorf("--print without --path: exit %d, stdout:\n%s", code, out)
	}
	// A path that does not exist here: printed, with the WARNING.
	missing := "/nonexistent-corral-test/bin/corral"
	if code, out, errOut := runCaptured(t, "setup", "apparmor", "--print", "--path", missing); code != 0 || !strings.Contains(errOut, "warning: "+missing+" does not exist here") ||
		!strings.HasPrefix(out, "# WARNING: "+missing+" does not exist here") || !strings.Contains(out, "\nprofile corral "+missing+" ") {
		t.Errorf("--print --path %s: exit %d, stderr %q, stdout:\n%s", missing, code, errOut, out)
	}
	if code, out, errOut := runCaptured(t, "setup", "apparmor", "--print", "--path", "/opt/a b"); code != 125 || out != "" || !strings.Contains(errOut, "refusing") {
		t.Errorf("--print of a path with a space: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestSetupAppArmorArgs: setup wants the apparmor action and no more.
func TestSetupAppArmorArgs(t *testing.T) {
	for _, args := range [][]string{{"setup"}, {"setup", "selinux"}, {"setup", "apparmor", "extra"}, {"setup", "apparmor", "--bogus"}} {
		if code, out, errOut := runCaptured(t, args...); code != 125 || out != "" || !strings.HasPrefix(errOut, "corral setup: ") && !strings.Contains(errOut, "usage: corral setup apparmor") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	code, out, _ := runCaptured(t, "help", "setup")
	if code != 0 || !strings.Contains(out, "usage: corral setup [--dir DIR] [--path BIN] [--print] apparmor") || !strings.Contains(out, "-print") {
		t.Errorf("help setup: exit %d:\n%s", code, out)
	}
	setupEuid = func() int { return 1000 }
	t.Cleanup(func() { setupEuid = os.Geteuid })
	if code, _, errOut := runCaptured(t, "setup", "apparmor"); code != 125 || !strings.Contains(errOut, "needs root: run sudo corral setup apparmor") {
		t.Errorf("as a user: exit %d, stderr %q", code, errOut)
	}
}

// fakeRoot makes setup believe it runs as root.
func fakeRoot(t *testing.T) {
	setupEuid = func() int { return 0 }
	t.Cleanup(func() { setupEuid = os.Geteuid })
}

// fakeAppArmor stands in for the kernel's files and apparmor_parser: a
// script that logs its arguments, copies the file -Q checks, fails the
// step FAKE_PARSER_FAIL names and lists the profile as loaded after -r.
// It returns the log.
func fakeAppArmor(t *testing.T, enabled string) (log, profiles string) {
	t.Helper()
	fakeRoot(t)
	dir := t.TempDir()
	log, profiles = filepath.Join(dir, "log"), filepath.Join(dir, "profiles")
	on := filepath.Join(dir, "enabled")
	if err := os.WriteFile(on, []byte(enabled), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(profiles, []byte("firefox (unconfined)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
echo "$*" >>"$FAKE_PARSER_LOG"
if [ "$1" = --version ]; then echo "AppArmor parser version ${FAKE_PARSER_VERSION:-4.1.0}"; echo "Copyright"; exit 0; fi
[ "$1" = -Q ] && cat "$3" >"$FAKE_PARSER_LOG.checked"
if [ "$1" = "$FAKE_PARSER_FAIL" ]; then
	echo "AppArmor parser error for $3 in profile $3 at line 1: Could not open 'abi/4.0': No such file or directory" >&2
	echo "second line" >&2
	exit 1
fi
if [ "$1" = -r ] && [ -n "$FAKE_PROFILES" ]; then echo "corral (unconfined)" >>"$FAKE_PROFILES"; fi
exit 0
`
	if err := os.WriteFile(filepath.Join(bin, "apparmor_parser"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_PARSER_LOG", log)
	t.Setenv("FAKE_PROFILES", profiles)
	t.Setenv("FAKE_PARSER_FAIL", "")
	savedOn, savedProfiles, savedDirs := apparmorEnabledFile, apparmorProfilesFile, apparmorParserDirs
	apparmorEnabledFile, apparmorProfilesFile, apparmorParserDirs = on, profiles, nil
	t.Cleanup(func() {
		apparmorEnabledFile, apparmorProfilesFile, apparmorParserDirs = savedOn, savedProfiles, savedDirs
	})
	return log, profiles
}

func readLog(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// leftovers lists what dir holds besides corral (a temporary file left
// behind would be one).
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != "corral" {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestSetupAppArmorInstall: as root the profile is checked (-Q -K on the
// temporary file), renamed into place with mode 0644, loaded (-r -W) and
// found in the kernel's list.
func TestSetupAppArmorInstall(t *testing.T) {
	bin := safeBinary(t)
	log, _ := fakeAppArmor(t, "Y\n")
	dir := t.TempDir()
	code, out, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", dir)
	file := filepath.Join(dir, "corral")
	if code != 0 || errOut != "" || out != "wrote "+file+" and loaded AppArmor profile corral (unconfined): "+bin+" may create user namespaces\n" {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, errOut, out)
	}
	want, _ := apparmorProfile(bin)
	if got := readLog(t, file); got != want {
		t.Errorf("%s:\n%s\nwant:\n%s", file, got, want)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of %s: %v %v", file, fi.Mode(), err)
	}
	if got := readLog(t, log+".checked"); got != want {
		t.Errorf("-Q -K checked:\n%s", got)
	}
	lines := strings.Split(strings.TrimSpace(readLog(t, log)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "-Q -K "+filepath.Join(dir, ".corral.tmp-")) || lines[1] != "-r -W "+file {
		t.Errorf("apparmor_parser ran with %q", lines)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("left behind: %q", l)
	}
}

// TestSetupAppArmorFailures: AppArmor off, no parser, a profile the
// parser refuses, a load that fails (the old file is put back) and a
// profile the kernel does not list: each a 125 that says so.
func TestSetupAppArmorFailures(t *testing.T) {
	bin := safeBinary(t)
	t.Run("AppArmor not enabled", func(t *testing.T) {
		log, _ := fakeAppArmor(t, "N\n")
		code, _, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", t.TempDir())
		if code != 125 || !strings.Contains(errOut, "AppArmor is not enabled in this kernel") || readLog(t, log) != "" {
			t.Errorf("exit %d, stderr %q, parser ran: %q", code, errOut, readLog(t, log))
		}
	})
	t.Run("no apparmor_parser", func(t *testing.T) {
		fakeAppArmor(t, "Y\n")
		t.Setenv("PATH", t.TempDir())
		code, _, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", t.TempDir())
		if code != 125 || !strings.Contains(errOut, "apparmor_parser not found") || !strings.Contains(errOut, "apt-get install apparmor") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("parser refuses the profile", func(t *testing.T) {
		fakeAppArmor(t, "Y\n")
		t.Setenv("FAKE_PARSER_FAIL", "-Q")
		t.Setenv("FAKE_PARSER_VERSION", "3.0.8")
		dir := t.TempDir()
		code, _, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", dir)
		if code != 125 || !strings.Contains(errOut, "-Q -K ") || !strings.Contains(errOut, "this is apparmor_parser 3.0.8, and the userns rule needs AppArmor 4.0") ||
			!strings.Contains(errOut, "\n  AppArmor parser error for ") || !strings.Contains(errOut, "\n  second line") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "corral")); !os.IsNotExist(err) {
			t.Errorf("a profile the parser refused was installed: %v", err)
		}
		if l := leftovers(t, dir); len(l) != 0 {
			t.Errorf("left behind: %q", l)
		}
	})
	t.Run("load fails, old profile kept", func(t *testing.T) {
		fakeAppArmor(t, "Y\n")
		t.Setenv("FAKE_PARSER_FAIL", "-r")
		dir := t.TempDir()
		file := filepath.Join(dir, "corral")
		if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", dir)
		if code != 125 || !strings.Contains(errOut, "-r -W "+file+" failed") || !strings.Contains(errOut, "put the previous "+file+" back") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		if got := readLog(t, file); got != "old\n" {
			t.Errorf("%s is now %q", file, got)
		}
		if l := leftovers(t, dir); len(l) != 0 {
			t.Errorf("left behind: %q", l)
		}
	})
	t.Run("load fails, no old profile", func(t *testing.T) {
		fakeAppArmor(t, "Y\n")
		t.Setenv("FAKE_PARSER_FAIL", "-r")
		dir := t.TempDir()
		code, _, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", dir)
		if code != 125 || !strings.Contains(errOut, "(removed "+filepath.Join(dir, "corral")+")") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("left behind: %v", entries)
		}
	})
	t.Run("not listed after the load", func(t *testing.T) {
		fakeAppArmor(t, "Y\n")
		t.Setenv("FAKE_PROFILES", "")
		code, _, errOut := runCaptured(t, "setup", "apparmor", "--path", bin, "--dir", t.TempDir())
		if code != 125 || !strings.Contains(errOut, "does not list a profile corral") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

// TestAppArmorParserVersion reads the version line of apparmor_parser.
func TestAppArmorParserVersion(t *testing.T) {
	fakeAppArmor(t, "Y\n")
	t.Setenv("FAKE_PARSER_VERSION", "3.0.8")
	parser, err := findAppArmorParser()
	if err != nil {
		t.Fatal(err)
	}
	v, major, minor, err := appArmorParserVersion(parser)
	if err != nil || v != "3.0.8" || major != 3 || minor != 0 {
		t.Errorf("got %q %d.%d, %v", v, major, minor, err)
	}
}

// TestAppArmorParserAcceptsProfile: the installed apparmor_parser parses
// the profile (-Q: no kernel load, -K: no cache). Only AppArmor 4.0 and
// later know abi 4.0 and the userns rule (Debian 13, Ubuntu 24.04):
// elsewhere it skips saying why.
func TestAppArmorParserAcceptsProfile(t *testing.T) {
	parser, err := findAppArmorParser()
	if err != nil {
		t.Skip("apparmor_parser is not installed (apt-get install apparmor; the check needs AppArmor 4.0 or later)")
	}
	v, major, _, err := appArmorParserVersion(parser)
	if err != nil {
		t.Fatal(err)
	}
	if major < 4 {
		t.Skipf("apparmor_parser %s is older than 4.0: it knows neither abi <abi/4.0> nor the userns rule", v)
	}
	profile, err := apparmorProfile("/usr/local/bin/corral")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "corral")
	if err := os.WriteFile(file, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(parser, "-Q", "-K", file).CombinedOutput(); err != nil {
		t.Errorf("apparmor_parser %s -Q -K: %v\n%s", v, err, out)
	}
}
