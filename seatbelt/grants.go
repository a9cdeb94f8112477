package seatbelt

import (
	"fmt"
	"path"
	"strings"

	"corral.dev/corral/policyengine"
)

// grants renders fs.read, fs.write, the private TmpDir and the protected
// paths.
func (r *renderer) grants() error {
	code := " file-map-executable process-exec"
	if r.restricted {
		code = ""
	}
	var writeRoots []root
	for _, list := range []struct {
		name    string
		entries []policyengine.Entry
		ops     string
		prefix  string
	}{
		{"fs.read", r.perms.Read, "file-read*", "READ"},
		{"fs.write", r.perms.Write, "file-read* file-write*", "WRITE"},
	} {
		var filters []string
		for _, e := range list.entries {
			g, err := policyengine.CompileGlob(e.Value)
			if err != nil {
				return fmt.Errorf("%s %q: %w", list.name, e.Value, err)
			}
			from := strings.Join(e.From, ", ")
			bases := []string{g.Base()}
			if real, ok := r.opts.RealPaths[g.Base()]; ok && Canonical(real) != Canonical(g.Base()) {
				bases = append(bases, real)
			}
			for _, base := range bases {
				rule := globRuleAt(g, base)
				if h := hidden(rule.Base); h != "" {
					r.warn("%s %s (%s) covers %s, which the sandbox never grants (shared with every other program); not granted", list.name, e.Value, from, h)
					continue
				}
				if rule.Widened {
					r.warn("%s %s (%s): a character class beyond ASCII (or excluding a backslash) matches any one character in the profile, wider than the glob", list.name, e.Value, from)
				}
				note := e.Value + " (" + from + ")"
				if base != g.Base() {
					note = "real path of " + note
				}
				filters = append(filters, r.filter(list.prefix, rule)+" ; "+comment(note))
				if list.prefix == "WRITE" {
					writeRoots = append(writeRoots, root{g, base, note})
				}
			}
		}
		r.line("")
		switch {
		case len(filters) == 0:
			r.linef("; %s: nothing granted.", list.name)
		case list.prefix == "READ":
			r.line("; fs.read.")
		default:
			r.line("; fs.write (write implies read).")
		}
		r.rule("allow "+list.ops+code, filters)
	}
	if r.opts.TmpDir != "" {
		r.line("")
		r.line("; The run's private TMPDIR (the host's /tmp is never granted).")
		r.rule("allow file-read* file-write*"+code, []string{"(subpath " + r.str("TMPDIR", Canonical(r.opts.TmpDir)) + ")"})
	}
	r.protected(writeRoots)
	return nil
}

// protected keeps the policyengine.ProtectedPaths inside each writable
// root read-only (git hooks and config, also of submodules under
// .git/modules; shell start-up files; tool and agent configs; the home
// folder's where a root holds it; the skills and policies), and the folders on the way to git's (.git,
// .git/modules and each module's folder) in place: they can be neither
// removed, renamed nor created, so a changed copy cannot be moved in. A
// name is protected only where the write glob reaches it.
func (r *renderer) protected(roots []root) {
	var protect, pins []string
	for _, wr := range roots {
		g := wr.glob
		if g.Literal() {
			continue // names one file or folder, nothing inside it
		}
		var names []string
		git := false
		for _, e := range policyengine.ProtectedPaths {
			if !e.Home && g.Match(path.Join(g.Base(), e.Path)) {
				names = append(names, regexQuote(e.Path))
				git = git || strings.HasPrefix(e.Path, ".git/")
			}
		}
		protect = append(protect, r.homeProtected(wr)...)
		modules := g.Match(path.Join(g.Base(), ".git/modules/m/hooks"))
		if modules {
			names = append(names, `\.git/modules/.+/(hooks|config)`)
		}
		if len(names) == 0 {
			continue
		}
		base := regexQuote(Canonical(wr.base))
		if wr.base == "/" {
			base = ""
		}
		re := "^" + base + "/(" + strings.Join(names, "|") + ")(/.*)?$"
		protect = append(protect, "(regex "+r.str("PROTECT", re)+") ; "+comment(wr.note))
		if git || modules {
			pin := "^" + base + `/\.git$`
			if modules {
				pin = "^" + base + `/\.git(/modules(/[^/]+)?)?$`
			}
			pins = append(pins, "(regex "+r.str("PIN", pin)+")")
		}
	}
	if len(protect) == 0 {
		return
	}
	r.line("")
	r.line("; Protected paths inside writable roots stay read-only: they run code later,")
	r.line("; outside the sandbox:")
	r.wrapComment("the paths corral explain lists (shell start-up files, tool and agent configs, git's hooks and config, also of submodules), the home folder's where a root holds it, and the skills and policies of the run.")
	r.rule("deny file-write*", protect)
	if len(pins) > 0 {
		r.line("; ...and the folders holding git's can be neither removed, renamed nor created.")
		r.rule("deny file-write-unlink file-write-create", pins)
	}
}

// homeProtected are the deny filters for the home-relative protected
// paths and the kept skills and policies inside the writable root wr.
// A path the glob's base names exactly stays writable (the user means
// it), except a skill or policy.
func (r *renderer) homeProtected(wr root) []string {
	var out []string
	g, home := wr.glob, r.opts.Home
	if home != "" && home != "/" {
		var names []string
		for _, e := range policyengine.ProtectedPaths {
			p := path.Join(home, e.Path)
			if (e.Home || isUnder(home, g.Base())) && p != g.Base() && g.Match(p) {
				names = append(names, regexQuote(e.Path))
			}
		}
		// One regex per few names: Seatbelt strings hold 1000 bytes.
		prefix := "^" + regexQuote(Canonical(home)) + "/("
		for len(names) > 0 {
			n, size := 0, len(prefix)+10
			for n < len(names) && (n == 0 || size+len(names[n])+1 < 900) {
				size += len(names[n]) + 1
				n++
			}
			re := prefix + strings.Join(names[:n], "|") + ")(/.*)?$"
			out = append(out, "(regex "+r.str("HOMEPROTECT", re)+") ; "+comment(wr.note)+" holds $HOME")
			names = names[n:]
		}
	}
	for _, k := range r.opts.Keep {
		if k != g.Base() && g.Match(k) {
			out = append(out, "(subpath "+r.str("KEEP", Canonical(k))+") ; a skill or policy of this run")
		}
	}
	return out
}
