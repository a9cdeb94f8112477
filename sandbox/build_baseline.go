package sandbox

import (
	"path"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
)

// baseline grants the system files every program needs, read-only.
func (b *builder) baseline() {
	restricted := b.plan.Exec.Restricted
	exec := uint64(fsExecute)
	if restricted {
		exec = 0
	}
	for _, glob := range policyengine.SystemRead {
		root := strings.TrimSuffix(glob, "/**")
		if isUnder(root, "/proc") || isUnder(root, "/dev") || isUnder(root, "/tmp") {
			continue // private mounts, set up below
		}
		roots := []string{root}
		if restricted && slices.Contains(programRoots, root) {
			roots = nil
			if root == "/usr" {
				roots = libraryRoots
				b.bind(root, true, false, policyengine.SystemSource+" (Landlock: only library folders and allowed programs)")
				for _, d := range dataRoots {
					b.restrictExec(d, "data, not code: noexec, so the dynamic loader cannot map a program from it")
				}
			}
			if info := b.facts.file(root); info.Exists && info.Real != root {
				// /bin -> usr/bin stays, so #!/bin/sh finds an allowed sh.
				b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountSymlnk, Source: info.Real, Target: root, Why: policyengine.SystemSource})
			}
		}
		for _, r := range roots {
			if content, ok := b.generatedEtc(r); ok {
				b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountFile, Source: content, Target: r, Why: policyengine.SystemSource + " (made for the sandbox, not the host's)"})
				b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: r, Access: readRights & fileRights & b.plan.Landlock.HandledFS, From: policyengine.SystemSource})
				continue
			}
			if r == "/etc/gitconfig" && b.facts.GitconfigSecret != "" {
				b.warn("/etc/gitconfig is left out of the system baseline: it holds %s; add it to fs.read if git in the sandbox needs it", b.facts.GitconfigSecret)
				continue
			}
			if restricted && isUnder(r, "/usr") {
				b.rule(r, readRights, policyengine.SystemSource)
				continue // inside the /usr bind
			}
			if r == "/usr" && b.usrRules(readRights|exec) {
				b.bind(r, true, false, policyengine.SystemSource)
				continue
			}
			b.rule(r, readRights|exec, policyengine.SystemSource)
			if info := b.facts.file(r); info.Exists && !info.Dir && info.Real == r && isUnder(r, "/etc") && info.Size <= copyMax {
				// Small /etc files are copied into the new root: a copy
				// costs a few syscalls, a bind a mount and its teardown.
				// A larger one is bound: the copy's pages cost more
				// (mime.types, 72 KiB, took 0.3 ms to copy here).
				b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountCopy, Source: r, Target: r, Why: policyengine.SystemSource})
				continue
			}
			// With an exec allowlist only the folders the program index
			// covers may hold code to map.
			b.bind(r, true, restricted && !slices.Contains(mappableRoots(), r), policyengine.SystemSource)
		}
	}
	// The private /tmp is the sandbox's own.
	b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountTmpfs, Target: "/tmp", NoExec: restricted, Why: "private /tmp; the host's /tmp (and its sockets) stays hidden"})
	b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: "/tmp", Access: (writeRights | exec) & b.plan.Landlock.HandledFS, From: "private /tmp"})
	b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountProc, Target: "/proc", Why: "private /proc showing only the sandbox's processes"})
	b.plan.Landlock.Rules = append(b.plan.Landlock.Rules, PathRule{Path: "/proc", Access: readRights, From: "private /proc"})
	masked := maskedProc
	if b.facts.Uid == 0 {
		masked = append(slices.Clone(masked), rootOnlyProc...)
	}
	for _, p := range masked {
		if b.facts.file(p).Exists {
			b.plan.Mounts = append(b.plan.Mounts, Mount{Kind: MountBind, Source: "/dev/null", Target: p, ReadOnly: true, Why: "the host's kernel state, which no sandboxed program needs: /dev/null on a nodev mount, so opening it fails"})
		}
	}
}

// generatedEtc returns the sandbox's own version of an /etc file the
// host's copy would say too much in: its users (only root and nobody are
// ever seen in the user namespace), its host names and its resolver (the
// sandbox has no DNS).
func (b *builder) generatedEtc(p string) (string, bool) {
	switch p {
	case "/etc/passwd":
		return "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", true
	case "/etc/group":
		return "root:x:0:\nnogroup:x:65534:\n", true
	case "/etc/hosts":
		return "127.0.0.1\tlocalhost\n127.0.1.1\t" + b.plan.Hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n", true
	case "/etc/resolv.conf":
		if b.plan.Proxy != nil && b.plan.Proxy.DNSPort != 0 {
			return "# corral's resolver: every name gets an address of its own, which leads to the\n# egress proxy; the proxy decides the name and resolves it for real.\nnameserver 127.0.0.1\n", true
		}
		if b.plan.Resolver != 0 {
			return "# No skill grants network (network.allow): corral answers every lookup with\n# \"no such name\" at once, and says after the run which names were looked up.\nnameserver 127.0.0.1\noptions attempts:1\n", true
		}
		return "# No DNS in the sandbox: corral's egress proxy resolves the names it allows.\n", true
	}
	return "", false
}

// usrRules grants access on each folder in /usr and /usr/local but the
// configuration folders (policyengine.SystemHidden); false when the probe
// could not list them, and /usr is then granted whole. /usr itself gets
// no rule: listing it would list the hidden folders too (Landlock rights
// hold for everything below a rule), and walking through it needs none.
func (b *builder) usrRules(access uint64) bool {
	usr, ok := b.facts.Listings["/usr"]
	if !ok {
		return false
	}
	local, ok := b.facts.Listings["/usr/local"]
	if !ok && slices.Contains(usr, "local") {
		b.warn("could not list /usr/local: it is readable whole, /usr/local/etc too")
		b.rule("/usr/local", access, policyengine.SystemSource)
	}
	for _, dir := range []struct {
		path  string
		names []string
	}{{"/usr", usr}, {"/usr/local", local}} {
		base := b.facts.file(dir.path).Real // /usr/local may be a link
		for _, n := range dir.names {
			p := path.Join(dir.path, n)
			// A symlink gets no rule of its own: it could point at a
			// hidden folder (conf -> etc) or above (up -> ..); where it
			// points inside /usr (lib64 -> lib), that folder's rule holds.
			if p == "/usr/local" || slices.Contains(policyengine.SystemHidden, p) || b.facts.file(p).Real != path.Join(base, n) {
				continue
			}
			b.rule(p, access, policyengine.SystemSource)
		}
	}
	return true
}
