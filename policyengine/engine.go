package policyengine

import (
	"fmt"
	"path"
	"strings"
)

// Engine answers questions about one merged permission set. It is built
// once and is safe for concurrent use; checks do not allocate on the
// common path and make no system calls.
type Engine struct {
	perms   Permissions
	workDir string
	read    []globRule // fs.read, fs.write (write implies read) and the system baseline
	write   []globRule // fs.write and the writable system baseline
	hosts   []hostRule
	exec    map[string]Entry // program name or absolute path → its entry
	env     []Entry
}

type globRule struct {
	glob  *Glob
	entry Entry
}

type hostRule struct {
	pattern HostPattern
	entry   Entry
}

// SystemSource names the system baseline as the source of an entry.
const SystemSource = "system baseline"

// SystemRead are the globs every sandbox may read so ordinary programs run:
// programs, libraries, shared data and the few /etc files that name
// services, users, time zones, certificates and locales. Secrets in /etc
// (shadow, ssh keys, sudoers) are deliberately not listed.
var SystemRead = []string{
	"/bin/**", "/sbin/**", "/lib/**", "/lib64/**", "/usr/**",
	"/etc/alternatives/**", "/etc/ca-certificates/**", "/etc/ssl/**",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d/**",
	"/etc/localtime", "/etc/timezone", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/host.conf", "/etc/resolv.conf", "/etc/passwd", "/etc/group",
	"/etc/locale.alias", "/etc/locale.conf", "/etc/mime.types", "/etc/magic",
	"/etc/inputrc", "/etc/terminfo/**", "/etc/gitconfig",
	"/proc/**", "/dev/null", "/dev/zero", "/dev/full", "/dev/random",
	"/dev/urandom", "/dev/tty", "/dev/fd/**", "/dev/stdin", "/dev/stdout",
	"/dev/stderr", "/sys/devices/system/cpu/**", "/tmp/**",
}

// SystemWrite are the paths every sandbox may write: the null devices, the
// terminal and the sandbox's own private /tmp.
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
}

// New compiles p into an Engine.
func New(p Permissions, opts Options) (*Engine, error) {
	e := &Engine{perms: p, workDir: path.Clean("/" + opts.WorkDir), exec: map[string]Entry{}}
	system := NewEntries(SystemSource, SystemRead)
	systemWrite := NewEntries(SystemSource, SystemWrite)
	var err error
	if e.read, err = compileGlobs(p.Read, p.Write, system); err != nil {
		return nil, err
	}
	if e.write, err = compileGlobs(p.Write, systemWrite); err != nil {
		return nil, err
	}
	for _, h := range p.Network {
		hp, err := ParseHostPattern(h.Value)
		if err != nil {
			return nil, fmt.Errorf("network rule %q: %w", h.Value, err)
		}
		e.hosts = append(e.hosts, hostRule{hp, h})
	}
	for _, x := range p.Exec {
		e.exec[x.Value] = x
	}
	e.env = append(e.env, p.Env...)
	e.env = append(e.env, NewEntries("default", DefaultEnv)...)
	return e, nil
}

// Permissions returns the permission set the engine answers for.
func (e *Engine) Permissions() Permissions { return e.perms }

func compileGlobs(lists ...[]Entry) ([]globRule, error) {
	var out []globRule
	for _, list := range lists {
		for _, entry := range list {
			g, err := CompileGlob(entry.Value)
			if err != nil {
				return nil, fmt.Errorf("path rule %q: %w", entry.Value, err)
			}
			out = append(out, globRule{g, entry})
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

// CheckRead decides whether path may be read.
func (e *Engine) CheckRead(p string) Decision {
	return e.checkPath(p, "read", e.read, e.perms.Read)
}

// CheckWrite decides whether path may be written.
func (e *Engine) CheckWrite(p string) Decision {
	return e.checkPath(p, "write", e.write, e.perms.Write)
}

func (e *Engine) checkPath(p, verb string, rules []globRule, declared []Entry) Decision {
	if p == "" {
		return Decision{Action: Deny, Reason: "an empty path names nothing"}
	}
	clean := e.abs(p)
	for _, r := range rules {
		if r.glob.Match(clean) {
			return Decision{
				Action: Allow,
				Reason: fmt.Sprintf("%s may be %s: it matches %s (from %s)", clean, pastTense(verb), r.entry.Value, strings.Join(r.entry.From, ", ")),
				Rule:   r.entry.Value,
			}
		}
	}
	reason := fmt.Sprintf("%s is outside the fs.%s globs", clean, verb)
	if len(declared) > 0 {
		reason += " of skills " + sources(declared)
	} else {
		reason += fmt.Sprintf(" (no skill declares fs.%s)", verb)
	}
	reason += fmt.Sprintf("; to allow it, add %q to permissions.fs.%s", clean, verb)
	return Decision{Action: Deny, Reason: reason}
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
			return Decision{Action: Allow, Reason: fmt.Sprintf("%s is passed through (from %s)", name, strings.Join(x.From, ", ")), Rule: x.Value}
		}
	}
	return Decision{Action: Deny, Reason: fmt.Sprintf("%s is dropped: it is not in the env list of any skill; to pass it, add %q to permissions.env", name, name)}
}

func envMatch(pattern, name string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return pattern == name
}
