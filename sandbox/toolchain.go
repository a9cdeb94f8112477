package sandbox

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// A toolchain is a folder of programs from the caller's PATH that the
// system baseline does not already read: /usr/local/go/bin,
// ~/.cargo/bin, ~/.nvm/versions/node/v22.1.0/bin, /opt/java/bin. Its
// programs need the tree around them (Go its GOROOT with pkg/tool and
// src, node its lib/node_modules), so the sandbox gets that tree
// read-only, with execute, and the folder on its PATH, after the
// sandbox's own folders and in the caller's order:
//
//   - with an exec list, for each exec entry whose program (found on the
//     sandbox's folders first, then on the caller's) is a real file
//     outside the system's program folders (/usr/local/bin/go -> the
//     real /usr/local/go/bin/go counts);
//   - without one, for each folder of the caller's PATH outside the
//     baseline.
//
// The tree is the folder's parent when the folder is named bin, and of it
// only what toolchains are made of (toolchainParts: bin, lib, share,
// include, ...; GOROOT's pkg and src beside its VERSION), each where it is
// a real folder or file of the parent's own: never etc (node's global
// npmrc may hold a registry token), conf, var or run (a service's secrets
// and sockets), nor a GOPATH's src (the user's repositories). Where the
// parent is a dot folder (~/.cargo, ~/.local, /root/.cargo when HOME is
// /) or holds dot files (.git, .env: a project, not an installation),
// more than maxToolchainEntries entries, or is too wide (/opt, /usr/lib),
// the bin folder alone is granted, and with an exec list not even that:
// the exec entry's own program runs, the folder's neighbours do not. A
// folder not named bin is no toolchain's (a PATH may name ~ or ~/.ssh).
// rustup's proxies in ~/.cargo/bin get ~/.rustup's toolchains and
// settings. A folder is never a toolchain when it is, holds or sits in
// the work dir, a write grant, a kept cache, the private home's store,
// corral's state, a folder the sandbox hides or /etc, nor when an fs.deny
// glob reaches into it: a toolchain is what the host installed, not what
// the command may write.

// Toolchain is one such folder and the trees it needs.
type Toolchain struct {
	// Bin is the folder the sandbox's PATH holds, as the caller's PATH
	// (or the program's real path) names it.
	Bin string `json:"bin"`
	// Roots are the real paths granted read and execute, read-only.
	Roots []string `json:"roots"`
	// For are the exec entries it provides (none without an exec list).
	For []string `json:"for,omitempty"`
	// Left are the trees it would get that fs.deny left out, and why.
	Left []string `json:"left,omitempty"`
}

// toolchainParts are the names in a toolchain's tree it may be given:
// what node's and Python's prefixes (bin, lib, include, share) are made
// of. goParts are GOROOT's, given only beside its VERSION or go.env (a
// GOPATH, ~/go, has bin, pkg and src too: the user's own repositories);
// jdkParts a JDK's, beside its release and jmods.
var (
	toolchainParts = []string{"bin", "doc", "include", "lib", "lib32", "lib64", "libexec", "man", "sbin", "share"}
	goParts        = []string{"VERSION", "api", "go.env", "misc", "pkg", "src"}
	jdkParts       = []string{"conf", "jmods", "legal", "release"}
)

// broadTrees are folders too wide to be a toolchain's tree: a bin folder
// directly in one of them is granted alone.
var broadTrees = []string{"/", "/usr", "/usr/local", "/opt", "/home", "/root", "/srv", "/var", "/snap", "/mnt", "/media", "/nix", "/nix/store", "/gnu/store"}

// maxToolchainEntries bounds the entries of a tree's folder: a larger
// one is not a toolchain's, and its bin folder is granted alone.
const maxToolchainEntries = 64

// systemBin reports whether d is one of the sandbox's own program
// folders, as written or by its real path (/bin -> usr/bin).
func systemBin(d string, real func(string) string) bool {
	for _, s := range strings.Split(policyengine.SandboxPATH, ":") {
		if d == s || d == real(s) {
			return true
		}
	}
	return false
}

// callerPATH returns the absolute folders of the caller's PATH, cleaned
// (a trailing slash dropped), in order, without repeats.
func callerPATH(env []string) []string {
	var out []string
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, d := range strings.Split(v, ":") {
			if c := filepath.Clean(d); filepath.IsAbs(d) && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// toolchainExcluded says why the tree t may not be a toolchain's ("" if
// it may): it is or holds or sits in a folder the command may write, the
// sandbox hides, or /etc.
func toolchainExcluded(t string, writable []string) string {
	for _, w := range writable {
		if w != "" && (isUnder(t, w) || isUnder(w, t)) {
			return "it is, holds or is inside " + w + ", which the command may write or later runs trust"
		}
	}
	if h := hiddenUnder(t); h != "" {
		return "it holds " + h + ", which the sandbox hides"
	}
	if h := hiddenRootOf(t); h != "" {
		return "it is inside " + h + ", which the sandbox hides"
	}
	if isUnder(t, "/etc") {
		return "it is inside /etc"
	}
	return ""
}

// toolchainTrees returns the trees the program folder bin (a real path)
// needs, given the first names in a folder (at most
// maxToolchainEntries+1 of them) and whether a path is a real folder or
// file, not a symlink. A bin folder that is no toolchain's is granted
// alone where there is no exec list, and not at all with one; a folder
// not named bin is not granted.
func toolchainTrees(bin, home string, restricted bool, names func(dir string) ([]string, bool), own func(string) bool) []string {
	alone := func() []string {
		if restricted {
			return nil
		}
		return []string{bin}
	}
	parent := path.Dir(bin)
	switch {
	case path.Base(parent) == ".cargo":
		// rustup's proxies run the toolchains it installed.
		out := alone()
		for _, p := range []string{".rustup/toolchains", ".rustup/settings.toml"} {
			if p = path.Join(path.Dir(parent), p); own(p) {
				out = append(out, p)
			}
		}
		return out
	case path.Base(bin) != "bin":
		// Not a folder of programs by its name: it could be anything
		// (a home folder, /home, ~/.ssh on a PATH), so nothing is given.
		return nil
	case broadTree(parent) || strings.HasPrefix(path.Base(parent), ".") || parent == home || path.Dir(parent) == "/home":
		// ~/bin: the home folder is no toolchain's tree.
		return alone()
	}
	list, ok := names(parent)
	if !ok || len(list) > maxToolchainEntries || slices.ContainsFunc(list, func(n string) bool { return strings.HasPrefix(n, ".") }) {
		// A tree with dot files (.git, .env) is a project, not an
		// installed toolchain: its secrets stay out.
		return alone()
	}
	goroot := slices.Contains(list, "VERSION") || slices.Contains(list, "go.env")
	jdk := slices.Contains(list, "release") && slices.Contains(list, "jmods")
	var out []string
	for _, n := range list {
		part := slices.Contains(toolchainParts, n) || goroot && slices.Contains(goParts, n) || jdk && slices.Contains(jdkParts, n)
		if part && own(path.Join(parent, n)) {
			out = append(out, path.Join(parent, n))
		}
	}
	if len(out) == 1 && out[0] == bin {
		return alone() // a bin folder and nothing of a toolchain's
	}
	return out
}

// broadTree reports whether t is too wide to be one toolchain's tree: a
// folder of broadTrees, or one that is or holds a library folder of the
// system (/usr/lib).
func broadTree(t string) bool {
	return slices.Contains(broadTrees, t) || slices.ContainsFunc(libraryRoots, func(r string) bool { return isUnder(r, t) }) || t == "/usr/libexec"
}

// toolchains grants each toolchain's trees read and execute, read-only:
// a bind where nothing else shows them executable (inside /usr, with an
// exec list, the /usr bind does, unless a folder or grant above the tree
// is bound noexec; programFolders leaves the folders inside it
// executable).
func (b *builder) toolchains() {
	var noexec []string
	if idx := b.facts.ProgramIndex; idx != nil {
		noexec = idx.Folders
	}
	noexec = append(slices.Clone(noexec), dataRoots...)
	// With an exec list every grant is bound noexec: a grant of
	// /usr/local/** covers /usr/local/go.
	for _, e := range append(slices.Clone(b.perms.Read), b.perms.Write...) {
		if g, err := policyengine.CompileGlob(e.Value); err == nil {
			noexec = append(noexec, b.facts.file(g.Base()).Real)
		}
	}
	for _, t := range b.facts.Toolchains {
		if len(t.Left) > 0 {
			msg := "toolchain " + t.Bin + ": left out of the sandbox: " + strings.Join(t.Left, ", ")
			b.warn("%s", msg)
			b.plan.Alerts = append(b.plan.Alerts, msg)
		}
		from := "toolchain " + t.Bin + " (the caller's PATH)"
		if len(t.For) > 0 {
			from = "toolchain of exec " + strings.Join(t.For, ", ") + " (" + t.Bin + ")"
		}
		for _, tree := range t.Roots {
			access := uint64(fsReadFile) // a README, a LICENSE
			if b.facts.file(tree).Dir {
				access = readRights | fsExecute
			}
			b.rule(tree, access, from)
			if !b.plan.Exec.Restricted || !isUnder(tree, "/usr") || slices.ContainsFunc(noexec, func(d string) bool { return d != tree && isUnder(tree, d) }) {
				b.bind(tree, true, false, from)
			}
		}
	}
}

// inToolchain reports whether the real path p is in a toolchain's tree.
func (b *builder) inToolchain(p string) bool {
	for _, t := range b.facts.Toolchains {
		if slices.ContainsFunc(t.Roots, func(r string) bool { return isUnder(p, r) }) {
			return true
		}
	}
	return false
}
