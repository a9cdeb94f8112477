package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"corral.dev/corral/printable"
)

var setupCommand = command{
	name:  "setup",
	usage: "apparmor",
	summary: `Prepare this host for corral (apparmor: allow its user namespaces).
On Ubuntu 23.10 and later AppArmor restricts unprivileged user namespaces
(sysctl kernel.apparmor_restrict_unprivileged_userns=1) to the programs
that a profile gives the userns rule; "apparmor" gives corral one.

As root, apparmor writes DIR/corral (atomically, mode 0644): a profile named
corral, attached to the real path of this corral binary (symbolic links
resolved) or to --path, whose only rule is userns (flags=(unconfined):
it confines nothing). It checks the file with apparmor_parser -Q -K,
loads it with apparmor_parser -r -W and checks that the kernel lists it.
It refuses when the binary or any folder above it is not owned by root or
is writable by its group or by others (whoever could replace the binary
would get user namespaces), and a path with characters AppArmor reads as
patterns or separators (only letters, digits and / . _ - + ~ are taken).
Rerun it after moving corral.

--print writes the profile to stdout instead, as any user. It still
refuses such characters, but an unsafe or missing path only adds a
"# WARNING" comment to the profile and a line on stderr (a packager may
print the profile for a path that exists elsewhere).

Exit status 0 when done, 125 when refused or failed.`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		var o setupOptions
		o.register(fs)
		return func(args []string) error {
			if len(args) == 0 {
				return failed(errors.New("want an action: corral setup apparmor [--print] [--path BIN] [--dir DIR]"))
			}
			if args[0] != "apparmor" {
				return failed(fmt.Errorf("unknown setup action %q (there is one: apparmor)", args[0]))
			}
			// Flags after the action, as in corral setup apparmor --print.
			sub := flag.NewFlagSet("corral setup apparmor", flag.ContinueOnError)
			sub.SetOutput(io.Discard)
			o.register(sub)
			if err := sub.Parse(args[1:]); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					fs.Usage()
					return nil
				}
				return failed(fmt.Errorf("%s (see 'corral setup -h')", flagError(sub, err)))
			}
			if sub.NArg() > 0 {
				return failed(fmt.Errorf("unexpected argument %q after apparmor", sub.Arg(0)))
			}
			return setupAppArmor(o, fs.Output())
		}
	},
}

// setupOptions are setup's flags; each is registered on the command's
// flag set and again after the action, on the same variables.
type setupOptions struct {
	print bool
	path  string
	dir   string
}

func (o *setupOptions) register(fs *flag.FlagSet) {
	if o.dir == "" {
		o.dir = "/etc/apparmor.d"
	}
	fs.BoolVar(&o.print, "print", o.print, "write the profile to stdout; write and load nothing (any user)")
	fs.StringVar(&o.path, "path", o.path, "attach the profile to `BIN` instead of this corral binary's real path")
	fs.StringVar(&o.dir, "dir", o.dir, "write the profile, a file named corral, in `DIR`")
}

// Where setup apparmor looks; the tests point them at fakes.
var (
	apparmorEnabledFile  = "/sys/module/apparmor/parameters/enabled"
	apparmorProfilesFile = "/sys/kernel/security/apparmor/profiles"
	apparmorParserDirs   = []string{"/sbin", "/usr/sbin"}
	setupEuid            = os.Geteuid
)

// apparmorProfileName is the profile's name: the kernel lists it as
// "corral (unconfined)".
const apparmorProfileName = "corral"

// apparmorProfile is the profile that lets the program at bin create user
// namespaces and confines nothing else, as Ubuntu's own profiles for bwrap
// and runc do. bin must be absolute and clean, and made of characters
// that AppArmor takes literally in an attachment (letters, digits,
// / . _ - + ~): no glob (* ? [ ] { } ^), no variable (@), no quote,
// comment, escape, comma or space.
func apparmorProfile(bin string) (string, error) {
	if err := apparmorSafeChars(bin); err != nil {
		return "", err
	}
	return fmt.Sprintf(`# Written by "corral setup apparmor": lets the corral binary at
# %[1]s create user namespaces where AppArmor restricts them
# (sysctl kernel.apparmor_restrict_unprivileged_userns=1), and confines
# nothing else. Rerun the command after moving corral.
abi <abi/4.0>,
include <tunables/global>

profile %[2]s %[1]s flags=(unconfined) {
  userns,

  # Site-specific additions and overrides. See local/README for details.
  include if exists <local/%[2]s>
}
`, bin, apparmorProfileName), nil
}

func apparmorSafeChars(bin string) error {
	if !filepath.IsAbs(bin) || filepath.Clean(bin) != bin || bin == "/" {
		return fmt.Errorf("refusing %q: the profile needs the absolute, clean path of a file", bin)
	}
	for _, r := range bin {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+~", r) {
			continue
		}
		return fmt.Errorf("refusing %q: AppArmor would not read %q in a profile's path literally; install corral at a path of letters, digits and / . _ - + ~ (or pass --path)", bin, r)
	}
	return nil
}

// apparmorBinary is the path the profile attaches to: --path, or this
// binary, with symbolic links resolved (the kernel attaches profiles by
// the real path).
func apparmorBinary(path string) (string, error) {
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding this corral binary: %w", err)
		}
		path = exe
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return abs, err
	}
	return real, nil
}

// checkBinaryOwners refuses bin when it, or any folder above it, is not
// owned by root or is writable by its group or by others: whoever could
// replace the binary would get user namespaces. The first offender, from
// bin upwards, is named.
func checkBinaryOwners(bin string) error {
	for p := bin; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
			return fmt.Errorf("%s: no owner to check", p)
		case p == bin && !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file (%v)", p, fi.Mode().Type())
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link", p)
		case st.Uid != 0:
			return fmt.Errorf("%s is owned by uid %d, not root", p, st.Uid)
		case fi.Mode().Perm()&0o022 != 0:
			return fmt.Errorf("%s is writable by its group or by others (%v)", p, fi.Mode())
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}

// unsafeBinary words checkBinaryOwners' refusal.
func unsafeBinary(bin string, err error) error {
	return fmt.Errorf("refusing to let %s create user namespaces: %v; whoever can replace it would get them (install corral where only root can write, e.g. /usr/local/bin, or pass --path)", bin, err)
}

// setupAppArmor is setup apparmor; warnings go to stderr.
func setupAppArmor(o setupOptions, stderr io.Writer) error {
	if o.print {
		return printAppArmor(o.path, stderr)
	}
	if setupEuid() != 0 {
		return failed(errors.New("writing and loading an AppArmor profile needs root: run sudo corral setup apparmor (or --print to see the profile)"))
	}
	bin, err := apparmorBinary(o.path)
	if err != nil {
		return failed(fmt.Errorf("the binary to allow: %w", err))
	}
	profile, err := apparmorProfile(bin)
	if err != nil {
		return failed(err)
	}
	if err := checkBinaryOwners(bin); err != nil {
		return failed(unsafeBinary(bin, err))
	}
	if on, err := os.ReadFile(apparmorEnabledFile); err != nil || strings.TrimSpace(string(on)) != "Y" {
		return failed(fmt.Errorf("AppArmor is not enabled in this kernel (%s is not Y), so it restricts nothing and corral needs no profile", apparmorEnabledFile))
	}
	parser, err := findAppArmorParser()
	if err != nil {
		return failed(err)
	}
	file := filepath.Join(o.dir, apparmorProfileName)
	if err := installAppArmorProfile(parser, file, []byte(profile)); err != nil {
		return failed(err)
	}
	mode, err := loadedAppArmorProfile(apparmorProfileName)
	if err != nil {
		return failed(fmt.Errorf("wrote %s and apparmor_parser loaded it, but %v", file, err))
	}
	fmt.Printf("wrote %s and loaded AppArmor profile %s (%s): %s may create user namespaces\n", file, apparmorProfileName, mode, bin)
	return nil
}

// printAppArmor writes the profile to stdout. An unsafe or missing binary
// is a WARNING comment (and a line on stderr), not a refusal: the profile
// may be meant for another host.
func printAppArmor(path string, stderr io.Writer) error {
	bin, err := apparmorBinary(path)
	var warning string
	if err != nil {
		if bin == "" || !errors.Is(err, fs.ErrNotExist) {
			return failed(fmt.Errorf("the binary to allow: %w", err))
		}
		warning = fmt.Sprintf("%s does not exist here: check that only root can write it and the folders above it where it does", bin)
	} else if err := checkBinaryOwners(bin); err != nil {
		warning = unsafeBinary(bin, err).Error()
	}
	profile, err := apparmorProfile(bin)
	if err != nil {
		return failed(err)
	}
	if warning != "" {
		fmt.Fprintf(stderr, "corral setup: warning: %s\n", printable.Text(warning))
		profile = "# WARNING: " + strings.ReplaceAll(warning, "\n", " ") + "\n" + profile
	}
	fmt.Print(profile)
	return nil
}

// findAppArmorParser finds apparmor_parser on PATH, or in /sbin or
// /usr/sbin (sudo's PATH may lack them).
func findAppArmorParser() (string, error) {
	if p, err := exec.LookPath("apparmor_parser"); err == nil {
		return p, nil
	}
	for _, d := range apparmorParserDirs {
		p := filepath.Join(d, "apparmor_parser")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("apparmor_parser not found (on PATH, in /sbin or /usr/sbin): install it (apt-get install apparmor)")
}

// installAppArmorProfile writes file through a temporary file in its
// folder, which apparmor_parser checks (-Q -K: parse only) before it
// replaces file, then loads file (-r -W). When the load fails, the
// previous file (or none) is put back.
func installAppArmorProfile(parser, file string, profile []byte) error {
	old, oldErr := os.ReadFile(file)
	tmp, err := writeTemp(file, profile)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // gone after the rename
	if err := runAppArmorParser(parser, "-Q", "-K", tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		return err
	}
	if err := runAppArmorParser(parser, "-r", "-W", file); err != nil {
		what := "removed " + file
		var undo error
		if oldErr == nil {
			what = "put the previous " + file + " back"
			var t string
			if t, undo = writeTemp(file, old); undo == nil {
				undo = os.Rename(t, file)
			}
		} else {
			undo = os.Remove(file)
		}
		if undo != nil {
			return fmt.Errorf("%v (and could not undo writing %s: %v)", err, file, undo)
		}
		return fmt.Errorf("%v (%s)", err, what)
	}
	return nil
}

// writeTemp writes data to a new file beside file, mode 0644, synced.
func writeTemp(file string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// runAppArmorParser runs apparmor_parser; a failure carries the first
// lines of its stderr, and says when the parser predates AppArmor 4.0,
// which the userns rule needs.
func runAppArmorParser(parser string, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command(parser, args...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("%s %s failed (%v)", parser, strings.Join(args, " "), err)
	if v, major, _, verr := appArmorParserVersion(parser); verr == nil && major < 4 {
		msg += fmt.Sprintf("; this is apparmor_parser %s, and the userns rule needs AppArmor 4.0 (an AppArmor that old does not restrict user namespaces either)", v)
	}
	var lines []string
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() && len(lines) < 6 {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, "  "+l)
		}
	}
	if len(lines) > 0 {
		msg += ":\n" + strings.Join(lines, "\n")
	}
	return errors.New(msg)
}

var parserVersionRE = regexp.MustCompile(`version (\d+)\.(\d+)(\.\d+)*`)

// appArmorParserVersion reads "AppArmor parser version 4.1.0" from
// apparmor_parser --version.
func appArmorParserVersion(parser string) (version string, major, minor int, err error) {
	out, err := exec.Command(parser, "--version").Output()
	if err != nil {
		return "", 0, 0, fmt.Errorf("%s --version: %w", parser, err)
	}
	m := parserVersionRE.FindSubmatch(out)
	if m == nil {
		return "", 0, 0, fmt.Errorf("%s --version printed no version: %q", parser, firstLine(string(out)))
	}
	major, _ = strconv.Atoi(string(m[1]))
	minor, _ = strconv.Atoi(string(m[2]))
	return string(m[0][len("version "):]), major, minor, nil
}

// loadedAppArmorProfile finds name in the kernel's list of loaded
// profiles ("corral (unconfined)") and returns its mode.
func loadedAppArmorProfile(name string) (string, error) {
	data, err := os.ReadFile(apparmorProfilesFile)
	if err != nil {
		return "", fmt.Errorf("reading the loaded profiles: %w", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, name+" ("); ok {
			return strings.TrimSuffix(rest, ")"), nil
		}
	}
	return "", fmt.Errorf("%s does not list a profile %s", apparmorProfilesFile, name)
}
