package seatbelt

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"corral.dev/corral/policyengine"
)

// Options are what a profile needs beyond the permissions.
type Options struct {
	// ProxyPort is the TCP port of corral's egress proxy on localhost.
	// With network rules the profile allows outbound connections to it
	// and nowhere else; without, no outbound connection at all (no UDP,
	// no DNS, no UNIX socket). Required when there are network rules.
	ProxyPort int
	// TmpDir is the run's private temporary folder, readable and
	// writable; empty for none. The host's /tmp is never granted.
	TmpDir string
	// Programs are the real paths (symlinks resolved) of the allowed
	// programs and the interpreters they need. With an exec list they may
	// run besides the names in the list (see Render).
	Programs []string
	// RealPaths maps the folder a grant starts from (a glob's Base, as the
	// permissions spell it) to its real path where symlinks lead
	// elsewhere. Seatbelt matches the path a file is reached by, after
	// symlinks, so the profile grants (and protects) both spellings.
	RealPaths map[string]string
	// Home is $HOME: where a writable root holds it, the home-relative
	// policyengine.ProtectedPaths stay read-only.
	Home string
	// Keep are the active skills' folders and the policy files in use:
	// read-only whatever the grants say.
	Keep []string
	// Inline writes user paths as escaped string literals instead of
	// parameters, so the profile stands alone (sandbox-exec -f FILE).
	Inline bool
}

// Param is one profile parameter: the profile reads (param "Name"), and
// sandbox-exec gets it as -D Name=Value.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Profile is a rendered Seatbelt profile.
type Profile struct {
	// Text is the SBPL source, for sandbox-exec -p.
	Text string `json:"profile"`
	// Params are the parameters Text reads, in the order it names them.
	Params []Param `json:"params,omitempty"`
	// Warnings are places where the profile is wider or narrower than
	// the permissions, and grants a person should know about.
	Warnings []string `json:"warnings,omitempty"`
}

// Args returns the sandbox-exec arguments that define the parameters:
// "-D", "NAME=VALUE" for each.
func (p *Profile) Args() []string {
	out := make([]string, 0, 2*len(p.Params))
	for _, pr := range p.Params {
		out = append(out, "-D", pr.Name+"="+pr.Value)
	}
	return out
}

// ErrBadPath means a path cannot be put in a profile: it has a NUL byte,
// is not absolute, or is longer than Seatbelt reads.
var ErrBadPath = errors.New("path not usable in a Seatbelt profile")

// Render renders the profile for merged permissions (path variables
// expanded; the default sandbox's grants already merged in, as the CLI
// does).
//
// Files: the macOS system baseline and fs.read are readable, fs.write
// readable and writable except the policyengine.ProtectedPaths inside each writable
// root, which stay read-only and cannot be moved or replaced. Programs:
// without an exec list, any readable file may run (as on Linux, where
// Landlock grants execute with read); with one, only the listed
// programs (a bare name on the sandbox's PATH or in the developer tools'
// bin folders, an absolute path as given) and Options.Programs, and code
// may be mapped only from the system's library folders. Network: see
// Options.ProxyPort. Services: each `services` entry "name:access" maps
// to the Mach services and operations of the table in services.go; an
// unknown name or access is an error.
func Render(p policyengine.Permissions, opts Options) (*Profile, error) {
	r := &renderer{opts: opts, perms: p, restricted: p.ExecRestricted(), named: map[string]string{}, counts: map[string]int{}}
	if err := r.check(); err != nil {
		return nil, err
	}
	r.base()
	r.files()
	if err := r.grants(); err != nil {
		return nil, err
	}
	r.exec()
	if err := r.deny(); err != nil {
		return nil, err
	}
	r.network()
	r.bind()
	if err := r.services(); err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, r.err
	}
	return &Profile{Text: r.header() + r.b.String(), Params: r.params, Warnings: r.warnings}, nil
}

type renderer struct {
	opts       Options
	perms      policyengine.Permissions
	restricted bool
	b          strings.Builder
	params     []Param
	named      map[string]string // prefix + "\x00" + value → param name
	counts     map[string]int
	warnings   []string
	err        error // the first bad string met
}

func (r *renderer) line(s string)               { r.b.WriteString(s + "\n") }
func (r *renderer) linef(f string, args ...any) { fmt.Fprintf(&r.b, f+"\n", args...) }
func (r *renderer) warn(f string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(f, args...))
}

// check refuses options a profile cannot hold.
func (r *renderer) check() error {
	if len(r.perms.Network) > 0 && (r.opts.ProxyPort <= 0 || r.opts.ProxyPort > 65535) {
		return fmt.Errorf("network rules need the egress proxy's port (1-65535), not %d", r.opts.ProxyPort)
	}
	paths := append([]string{r.opts.TmpDir}, r.opts.Programs...)
	for _, p := range r.opts.RealPaths {
		paths = append(paths, p)
	}
	for _, p := range paths {
		if p != "" && (!path.IsAbs(p) || path.Clean(p) != p) {
			return fmt.Errorf("%w: %q is not an absolute, clean path", ErrBadPath, p)
		}
	}
	return nil
}

// str returns the SBPL expression for a user string: a parameter named
// prefix_N (the same value under the same prefix shares one), or with
// Options.Inline a quoted literal.
func (r *renderer) str(prefix, value string) string {
	if err := checkString(value); err != nil && r.err == nil {
		r.err = err
	}
	if r.opts.Inline {
		return quote(value)
	}
	key := prefix + "\x00" + value
	if name, ok := r.named[key]; ok {
		return `(param "` + name + `")`
	}
	name := prefix
	if prefix != "TMPDIR" {
		name = prefix + "_" + strconv.Itoa(r.counts[prefix])
		r.counts[prefix]++
	}
	r.named[key] = name
	r.params = append(r.params, Param{Name: name, Value: value})
	return `(param "` + name + `")`
}

// checkString refuses what no Seatbelt string can hold.
func checkString(s string) error {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %q holds a NUL byte", ErrBadPath, s)
	case len(s) > maxString:
		return fmt.Errorf("%w: %q is longer than the %d bytes a Seatbelt string holds", ErrBadPath, s[:40]+"...", maxString)
	}
	return nil
}

// filter renders a path rule whose value is a user path (a parameter).
func (r *renderer) filter(prefix string, rule pathRule) string {
	return "(" + rule.Kind.String() + " " + r.str(prefix, rule.Value) + ")"
}

// sysFilter renders a path rule of corral's own (a string literal).
func sysFilter(rule pathRule) string {
	return "(" + rule.Kind.String() + " " + quote(rule.Value) + ")"
}

func (r *renderer) header() string {
	var h strings.Builder
	h.WriteString("; Seatbelt profile rendered by corral from the skills' merged permissions.\n")
	if len(r.params) > 0 {
		h.WriteString("; Parameters (sandbox-exec -D NAME=VALUE):\n")
		for _, p := range r.params {
			h.WriteString(";   " + p.Name + " = " + comment(p.Value) + "\n")
		}
	}
	return h.String()
}

// base lets ordinary programs run.
func (r *renderer) base() {
	r.line("(version 1)")
	r.line("(deny default)")
	r.line("")
	r.line("; Processes: fork; signals and process information only within the sandbox.")
	r.line("(allow process-fork)")
	r.line("(allow signal (target same-sandbox))")
	r.line("(allow process-info* (target same-sandbox))")
	r.line("")
	r.line("; System information runtimes read at start-up.")
	r.line("(allow sysctl-read")
	for _, n := range sysctlNames {
		r.linef("  (sysctl-name %s)", quote(n))
	}
	for _, n := range sysctlPrefixes {
		r.linef("  (sysctl-name-prefix %s)", quote(n))
	}
	r.line(")")
	r.line("")
	r.line("; User and group lookups, logging, and the notification centre behind them.")
	r.line("(allow mach-lookup")
	for _, n := range machServices {
		r.linef("  (global-name %s)", quote(n))
	}
	r.line(")")
	r.line(`(allow ipc-posix-shm-read-data (ipc-posix-name "apple.shm.notification_center"))`)
	r.line("; POSIX semaphores (Python's multiprocessing locks).")
	r.line("(allow ipc-posix-sem)")
	r.line("")
	r.line("; Terminals: ptys the command opens itself are its own; the terminal it")
	r.line("; inherits may be read and written but not controlled (no ioctl, so no")
	r.line("; TIOCSTI typing into the user's shell).")
	r.line("(allow pseudo-tty)")
	r.line(`(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))`)
	r.line(`(allow file-read* file-write* file-ioctl`)
	r.line(`  (require-all (regex "^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))`)
	r.line(`(allow file-read-data file-write-data`)
	r.line(`  (require-all (regex "^/dev/ttys[0-9]+$") (vnode-type CHARACTER-DEVICE)))`)
}

// files grants the devices, the walk to granted paths and the system
// baseline.
func (r *renderer) files() {
	var devRead, devWrite []string
	for _, g := range policyengine.SystemRead {
		if isUnder(g, "/dev") {
			devRead = append(devRead, sysFilter(mustRule(g)))
		}
	}
	devRead = append(devRead, `(literal "/dev/autofs_nowait")`, `(literal "/dev/dtracehelper")`)
	for _, g := range policyengine.SystemWrite {
		if isUnder(g, "/dev") {
			devWrite = append(devWrite, sysFilter(mustRule(g)))
		}
	}
	devWrite = append(devWrite, `(literal "/dev/dtracehelper")`)
	r.line("")
	r.line("; Devices: the null devices, randomness, the terminal, the process's own")
	r.line("; descriptors. Data only: no device may be created, removed or renamed.")
	r.rule("allow file-read*", devRead)
	r.rule("allow file-write-data", devWrite)
	r.rule("allow file-ioctl", []string{`(literal "/dev/dtracehelper")`, `(literal "/dev/null")`,
		`(literal "/dev/random")`, `(literal "/dev/urandom")`, `(literal "/dev/zero")`})
	r.line("")
	r.line("; Walking to granted paths: getcwd and realpath stat every folder on the")
	r.line("; way (folders' metadata only, not their listings) and read the symlinks")
	r.line("; /etc, /tmp and /var.")
	r.line("(allow file-read-metadata (vnode-type DIRECTORY))")
	r.line(`(allow file-read* (literal "/"))`)
	r.line(`(allow file-read-metadata (literal "/etc") (literal "/tmp") (literal "/var"))`)

	var sys []string
	for _, g := range policyengine.SystemRead {
		if isUnder(g, "/dev") || isUnder(g, "/proc") || isUnder(g, "/sys") || isUnder(g, "/tmp") {
			continue // devices above; no /proc or /sys on macOS; TmpDir replaces /tmp
		}
		sys = append(sys, sysFilter(mustRule(g)))
	}
	for _, g := range systemRead {
		sys = append(sys, sysFilter(mustRule(g)))
	}
	slices.Sort(sys)
	sys = slices.Compact(sys)
	r.line("")
	if r.restricted {
		r.line("; System baseline, read-only: the files every program needs (policyengine's")
		r.line("; SystemRead, canonicalised) and the macOS folders below. With an exec list,")
		r.line("; code may be mapped only from the system's library folders.")
		r.rule("allow file-read*", sys)
		var libs []string
		for _, l := range libraryRoots {
			libs = append(libs, sysFilter(pathRule{Kind: filterSubpath, Value: l}))
		}
		r.rule("allow file-map-executable", libs)
	} else {
		r.line("; System baseline, read-only: the files every program needs (policyengine's")
		r.line("; SystemRead, canonicalised) and the macOS folders below. Without an exec")
		r.line("; list what is readable may also run and be mapped as code, as on Linux.")
		r.rule("allow file-read* file-map-executable process-exec", sys)
	}
	var hide []string
	for _, h := range append(slices.Clone(policyengine.SystemHidden), systemHidden...) {
		hide = append(hide, sysFilter(pathRule{Kind: filterSubpath, Value: h}))
	}
	slices.Sort(hide)
	r.line("")
	r.line("; Configuration folders inside the baseline (software installed by hand or")
	r.line("; by Homebrew keeps settings, and at times passwords, there): left out, as")
	r.line("; /etc is. A skill's own fs glob below grants them again.")
	r.rule("deny file-read* file-map-executable process-exec", hide)
}

// rule writes one allow or deny rule with one filter a line.
func (r *renderer) rule(head string, filters []string) {
	if len(filters) == 0 {
		return
	}
	// A filter may end in a "; comment": only a bare one shares the line
	// with the closing parenthesis.
	if len(filters) == 1 && len(head)+len(filters[0]) < 76 && !strings.Contains(filters[0], ";") {
		r.line("(" + head + " " + filters[0] + ")")
		return
	}
	r.line("(" + head)
	for _, f := range filters {
		r.line("  " + f)
	}
	r.line(")")
}

// mustRule compiles one of corral's own globs.
func mustRule(glob string) pathRule {
	rule, err := globRule(glob)
	if err != nil {
		panic(fmt.Sprintf("seatbelt: built-in glob %q: %v", glob, err))
	}
	return rule
}

// hidden returns the hidden root that the canonical base is, or holds.
func hidden(base string) string {
	for _, h := range hiddenRoots {
		if base == h || isUnder(h, base) {
			return h
		}
	}
	return ""
}

// root is one writable root: a write glob and the spelling of its base
// folder a rule names.
type root struct {
	glob *policyengine.Glob
	base string
	note string // for a comment
}

// wrapComment writes text as ";" comment lines of at most 80 columns.
// text is corral's own (no line breaks).
func (r *renderer) wrapComment(text string) {
	line := ";"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 80 && line != ";" {
			r.line(line)
			line = ";"
		}
		line += " " + w
	}
	r.line(line)
}

// exec renders the exec allowlist.
func (r *renderer) exec() {
	r.line("")
	if !r.restricted {
		r.line("; Programs: no exec list, so whatever is readable may run (allowed above).")
		return
	}
	var dirs []string
	for _, d := range slices.Concat(strings.Split(policyengine.SandboxPATH, ":"), toolDirs) {
		dirs = append(dirs, regexQuote(Canonical(d)))
	}
	var filters []string
	sh := false
	for _, e := range r.perms.Exec {
		v := e.Value
		if strings.HasPrefix(v, "/") {
			filters = append(filters, "(literal "+r.str("EXEC", Canonical(path.Clean(v)))+") ; "+comment(v))
		} else {
			re := "^(" + strings.Join(dirs, "|") + ")/" + regexQuote(v) + "$"
			filters = append(filters, "(regex "+r.str("EXEC", re)+") ; "+comment(v)+" on PATH")
		}
		sh = sh || v == "sh" || v == "/bin/sh"
	}
	programs := slices.Clone(r.opts.Programs)
	slices.Sort(programs)
	for _, p := range slices.Compact(programs) {
		filters = append(filters, "(literal "+r.str("EXEC", Canonical(p))+") ; "+comment(p)+", resolved")
	}
	if sh {
		for _, t := range shellTrampolines {
			filters = append(filters, "(literal "+quote(t)+") ; what /bin/sh starts")
		}
	}
	r.line("; Programs: only the exec list (a bare name on the sandbox's PATH or in the")
	r.line("; developer tools' folders), with read access and their code mappable.")
	if len(filters) == 0 {
		r.line("; The exec list is empty: nothing may run.")
		return
	}
	r.rule("allow process-exec file-read* file-map-executable", filters)
}

// network allows the egress proxy and nothing else.
func (r *renderer) network() {
	r.line("")
	if len(r.perms.Network) == 0 {
		r.line("; Network: no network.allow rule, so no outbound connection at all.")
		return
	}
	r.linef("; Network: only corral's egress proxy on localhost:%d, which enforces the", r.opts.ProxyPort)
	r.linef("; %d network.allow rule(s); no other address, no DNS, no UNIX socket.", len(r.perms.Network))
	r.linef(`(allow network-outbound (remote ip "localhost:%d"))`, r.opts.ProxyPort)
}

// bind allows listening on the network.bind ports, on localhost only:
// macOS has no network namespace, so a port on another address would
// be reachable from other machines.
func (r *renderer) bind() {
	ports, any := r.perms.BindPorts()
	if !any && len(ports) == 0 {
		return
	}
	r.line("")
	r.line("; network.bind: listening on localhost only (macOS has no network namespace:")
	r.line("; other local programs can connect too).")
	if any {
		r.line(`(allow network-bind network-inbound (local ip "localhost:*"))`)
		r.line(`(allow network-outbound (remote ip "localhost:*"))`)
		return
	}
	for _, p := range ports {
		r.linef(`(allow network-bind network-inbound (local ip "localhost:%d"))`, p)
		r.linef(`(allow network-outbound (remote ip "localhost:%d"))`, p)
	}
}

// services renders the `services` entries.
func (r *renderer) services() error {
	for _, e := range r.perms.Services {
		g, note, err := serviceGrant(e.Value)
		if err != nil {
			return fmt.Errorf("%w (from %s)", err, strings.Join(e.From, ", "))
		}
		if note != "" {
			r.warn("%s (%s)", note, strings.Join(e.From, ", "))
		}
		r.line("")
		r.linef("; Service %s.", comment(e.Value))
		var names []string
		for _, m := range g.mach {
			names = append(names, "(global-name "+quote(m)+")")
		}
		r.rule("allow mach-lookup", names)
		for _, op := range g.ops {
			r.line("(allow " + op + ")")
		}
		var reads []string
		for _, p := range g.read {
			reads = append(reads, sysFilter(pathRule{Kind: filterSubpath, Value: p}))
		}
		r.rule("allow file-read*", reads)
	}
	return nil
}
