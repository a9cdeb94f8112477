package policyengine

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Engine answers questions about one merged permission set. It is built
// once and is safe for concurrent use; checks do not allocate on the
// common path and make no system calls.
type Engine struct {
	perms   Permissions
	workDir string
	read    globIndex             // fs.read, fs.write (write implies read) and the system baseline
	write   globIndex             // fs.write and the writable system baseline
	deny    []globRule            // fs.deny
	granted []string              // the bases of fs.read and fs.write: where fs.deny applies
	shown   []string              // where the sandbox shows the host's files (shownBases)
	hosts   []hostRule            // wildcard, IP and preset rules, tried in turn
	exact   map[string][]hostRule // exact-name rules by host
	exec    map[string]Entry      // program name or absolute path → its entry
	kernel  func(prog string) (string, bool)
	exists  func(prog string) bool
	env     []Entry
	host    HostAddrs // nil: no address is known to be the host's

	// Sentence parts computed once, so a decision costs one concatenation.
	readFrom, writeFrom, netFrom, execFrom string
}

type globRule struct {
	glob  *Glob
	entry Entry
	why   string // ": it matches GLOB (from SKILLS)"
	// own is the place of SandboxOwn a system baseline entry is about
	// (/tmp for /tmp/**), "" for the rest.
	own string
}

type hostRule struct {
	pattern HostPattern
	entry   Entry
	why     string
}

// matchesFrom is the tail of an allow reason: the rule and its sources.
func matchesFrom(e Entry) string {
	return ": it matches " + e.Value + " (from " + strings.Join(e.From, ", ") + ")"
}

// SystemSource names the system baseline as the source of an entry.
const SystemSource = "system baseline"

// SystemRead are the globs every sandbox may read so ordinary programs run:
// programs, libraries, shared data and the few /etc files that name
// services, users, time zones, certificates, locales and the system. Secrets in /etc
// (shadow, ssh keys, sudoers, the TLS private keys in /etc/ssl/private)
// are deliberately not listed. Those in SandboxOwn (/tmp/**, /proc/**)
// are the sandbox's own files, not the host's.
var SystemRead = []string{
	"/bin/**", "/sbin/**", "/lib/**", "/lib64/**", "/usr/**",
	"/etc/alternatives/**", "/etc/ca-certificates/**",
	"/etc/ssl/certs/**", "/etc/ssl/cert.pem", "/etc/ssl/openssl.cnf",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d/**",
	"/etc/localtime", "/etc/timezone", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/host.conf", "/etc/resolv.conf", "/etc/passwd", "/etc/group",
	"/etc/locale.alias", "/etc/locale.conf", "/etc/mime.types", "/etc/magic",
	"/etc/inputrc", "/etc/terminfo/**", "/etc/gitconfig",
	// Which system this is: pip, Python's platform and distro modules
	// and many installers read them, and fail on EACCES.
	"/etc/os-release", "/etc/debian_version", "/etc/lsb-release",
	"/proc/**", "/dev/null", "/dev/zero", "/dev/full", "/dev/random",
	"/dev/urandom", "/dev/tty", "/dev/fd/**", "/dev/stdin", "/dev/stdout",
	"/dev/stderr", "/sys/devices/system/cpu/**", "/tmp/**",
}

// SystemHidden are the configuration folders inside the baseline's /usr:
// software installed by hand keeps its settings, and at times its
// passwords and tokens, there (npm's global npmrc, a redis.conf), as it
// would in /etc. The baseline does not cover them; a skill's own fs glob
// can.
var SystemHidden = []string{"/usr/etc", "/usr/local/etc"}

// systemHidden reports whether clean lies in one of SystemHidden.
func systemHidden(clean string) bool {
	for _, h := range SystemHidden {
		if clean == h || strings.HasPrefix(clean, h+"/") {
			return true
		}
	}
	return false
}

// SystemWrite are the paths every sandbox may write: the null devices, the
// terminal and the sandbox's own private /tmp (SandboxOwn).
var SystemWrite = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/stdout",
	"/dev/stderr", "/dev/fd/**", "/tmp/**",
}

// DefaultEnv are the variables every sandbox passes through besides the
// skills' env lists.
var DefaultEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ"}

// Options configure an Engine.
type Options struct {
	// WorkDir resolves relative paths in checks and in shell redirections.
	WorkDir string
	// KernelExec tells whether the kernel lets prog run although no exec
	// entry names it, and why: the kernel's rule is on the file, so a
	// program that is the same file as an allowed one (a busybox applet's
	// symlink, python3.11 for python3) runs, and so does the #!
	// interpreter of an allowed script, which needs the execute right to
	// start the script (sandbox.KernelExec reads the file system). It is
	// asked only for programs the exec list does not name.
	KernelExec func(prog string) (why string, ok bool)
	// Exists tells whether a program the exec list refuses is there at
	// all (on the sandbox's PATH, or a path from the work dir): a
	// missing one is reported as not found (exit 127) rather than as
	// something to add to the exec list. Nil: every program exists.
	Exists func(prog string) bool
}

// New compiles p into an Engine.
func New(p Permissions, opts Options) (*Engine, error) {
	e := &Engine{perms: p, workDir: path.Clean("/" + opts.WorkDir), exec: map[string]Entry{}, exact: map[string][]hostRule{}}
	system := NewEntries(SystemSource, SystemRead)
	systemWrite := NewEntries(SystemSource, SystemWrite)
	var err error
	if e.read, err = compileGlobs(p.Read, p.Write, system); err != nil {
		return nil, err
	}
	if e.write, err = compileGlobs(p.Write, systemWrite); err != nil {
		return nil, err
	}
	if e.deny, e.granted, err = compileDeny(p); err != nil {
		return nil, err
	}
	e.shown = shownBases(e.read, p.Exec)
	for _, h := range p.Network {
		hp, err := ParseHostPattern(h.Value)
		if err != nil {
			return nil, fmt.Errorf("network rule %q: %w", h.Value, err)
		}
		r := hostRule{hp, h, matchesFrom(h)}
		if host, ok := exactHost(hp); ok {
			e.exact[host] = append(e.exact[host], r)
		} else {
			e.hosts = append(e.hosts, r)
		}
	}
	e.readFrom = declaredBy(p.Read, "read")
	e.writeFrom = declaredBy(p.Write, "write")
	e.netFrom = sources(p.Network)
	e.execFrom = strings.Join(p.ExecDeclared, ", ")
	for _, x := range p.Exec {
		e.exec[x.Value] = x
	}
	e.kernel = opts.KernelExec
	e.exists = opts.Exists
	e.env = append(e.env, p.Env...)
	e.env = append(e.env, NewEntries("default", DefaultEnv)...)
	return e, nil
}

// WithHostAddrs returns a copy of e that asks h whether an address is this
// machine's own (CatHost). Without it CatHost never applies: decisions stay
// pure functions of the permissions, as explain and the Seatbelt profile
// need. The proxy and check use it, since what they allow is dialled here.
func (e *Engine) WithHostAddrs(h HostAddrs) *Engine {
	c := *e
	c.host = h
	return &c
}

// Permissions returns the permission set the engine answers for.
func (e *Engine) Permissions() Permissions { return e.perms }

// globIndex files rules by the first segment of their base ("" for rules
// based at /), so a path is tried only against rules that can match it.
type globIndex map[string][]globRule

func firstSegment(p string) string {
	p = strings.TrimPrefix(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}

func (x globIndex) candidates(p string) ([]globRule, []globRule) {
	return x[firstSegment(p)], x[""]
}

func compileGlobs(lists ...[]Entry) (globIndex, error) {
	out := globIndex{}
	for _, list := range lists {
		for _, entry := range list {
			g, err := CompileGlob(entry.Value)
			if err != nil {
				return nil, fmt.Errorf("path rule %q: %w", entry.Value, err)
			}
			r := globRule{glob: g, entry: entry, why: matchesFrom(entry)}
			if slices.Equal(entry.From, []string{SystemSource}) {
				r.own = ownPlace(g.Base())
			}
			key := firstSegment(g.Base())
			out[key] = append(out[key], r)
		}
	}
	return out, nil
}

// abs makes p absolute against the work directory and cleans it, so ".."
// is resolved before any rule sees the path.
func (e *Engine) abs(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = e.workDir + "/" + p
	}
	return path.Clean(p)
}

// CheckRead decides whether the host's file at path may be read by a
// sandboxed command. The system baseline's entries in the sandbox's own
// places (SandboxOwn: /tmp/**, /proc/**) do not grant it: a command that
// reads /tmp/x reads the sandbox's private /tmp.
func (e *Engine) CheckRead(p string) Decision {
	return e.checkPath(p, "read", e.read, e.readFrom, false)
}

// CheckWrite decides whether the host's file at path may be written by a
// sandboxed command (see CheckRead).
func (e *Engine) CheckWrite(p string) Decision {
	return e.checkPath(p, "write", e.write, e.writeFrom, false)
}

// CheckReadInside decides whether a sandboxed command may read path as it
// sees it, whatever file that is: the sandbox's own /tmp/x as well as the
// host's files its grants show. A command line's redirections are
// checked so.
func (e *Engine) CheckReadInside(p string) Decision {
	return e.checkPath(p, "read", e.read, e.readFrom, true)
}

// CheckWriteInside decides whether a sandboxed command may write path as
// it sees it (see CheckReadInside).
func (e *Engine) CheckWriteInside(p string) Decision {
	return e.checkPath(p, "write", e.write, e.writeFrom, true)
}

// declaredBy says who declares the fs globs of a kind, for deny reasons.
func declaredBy(entries []Entry, verb string) string {
	if len(entries) == 0 {
		return " (no skill declares fs." + verb + ")"
	}
	return " of skills " + sources(entries)
}

// checkPath decides a read or write of p; inside asks about the path as
// the command sees it, not about the host's file (SandboxOwn).
func (e *Engine) checkPath(p, verb string, index globIndex, declaredBy string, inside bool) Decision {
	if p == "" {
		return Decision{Action: Deny, Reason: "an empty path names nothing"}
	}
	clean := e.abs(p)
	if r, ok := e.denied(clean); ok {
		return Decision{Action: Deny, Reason: clean + " may not be " + pastTense(verb) + ": it matches the fs.deny glob " + r.entry.Value +
			" (from " + strings.Join(r.entry.From, ", ") + "), which carves it out of the fs grants", Rule: r.entry.Value}
	}
	hiddenFromBaseline := systemHidden(clean)
	var own *globRule // a baseline entry of the sandbox's own that matched but does not answer here
	near, rooted := index.candidates(clean)
	for _, rules := range [2][]globRule{near, rooted} {
		for i, r := range rules {
			if hiddenFromBaseline && slices.Equal(r.entry.From, []string{SystemSource}) {
				continue
			}
			if !r.glob.matchClean(clean) {
				continue
			}
			if r.own != "" && (!inside || within(clean, e.shown)) {
				// Below a grant's folder the sandbox shows the host's
				// files, and the grants alone decide, as anywhere else.
				if !within(clean, e.shown) {
					own = &rules[i]
				}
				continue
			}
			return Decision{Action: Allow, Reason: clean + " may be " + pastTense(verb) + r.why, Rule: r.entry.Value}
		}
	}
	why := " is outside the fs." + verb + " globs" + declaredBy
	if hiddenFromBaseline {
		why = " is in a configuration folder, which the system baseline leaves out, and outside the fs." + verb + " globs" + declaredBy
	}
	advice := "; to allow it, add " + strconv.Quote(clean) + " to permissions.fs." + verb
	if own != nil {
		advice += ownReason(*own)
	}
	return Decision{Action: Deny, Reason: clean + why + advice}
}

func pastTense(verb string) string {
	if verb == "write" {
		return "written"
	}
	return "read"
}

// CheckEnv decides whether the environment variable name is passed into the
// sandbox.
func (e *Engine) CheckEnv(name string) Decision {
	for _, x := range e.env {
		if envMatch(x.Value, name) {
			return Decision{Action: Allow, Reason: name + " is passed through (from " + strings.Join(x.From, ", ") + ")", Rule: x.Value}
		}
	}
	return Decision{Action: Deny, Reason: name + " is dropped: it is not in the env list of any skill; to pass it, add " + strconv.Quote(name) + " to permissions.env"}
}

func envMatch(pattern, name string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return pattern == name
}
