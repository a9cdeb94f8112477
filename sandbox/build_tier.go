package sandbox

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/printable"
)

// tierOf is the tier a plan is built for: the one the init reported, or,
// for explain (no init), the one auto would choose on this host.
func tierOf(spec Spec, facts *Facts) Tier {
	if spec.Tier == TierNamespaces || spec.Tier == TierLandlock {
		return spec.Tier
	}
	if facts.UserNSErr != "" {
		return TierLandlock
	}
	return TierNamespaces
}

// landlockTier turns a plan built for the namespaces tier into the
// landlock tier's: no mounts (the command sees the host's file system,
// and Landlock alone decides what it reaches), a folder of the run's own
// for TMPDIR instead of a private /tmp, no /dev/shm, the proxy on the
// host's loopback at the port corral listens on, and Landlock's TCP
// rules with no port at all (corral's connect supervisor connects the
// sockets it allows itself; no direct connect or bind is left to the
// command).
func (b *builder) landlockTier() {
	p := b.plan
	b.nsMounts = p.Mounts
	p.Mounts = nil
	tmp := b.spec.RunTmp
	p.RunTmp = tmp
	p.Resolver = 0 // no network namespace of its own to answer in
	if tmp == "" {
		tmp = "(a folder made for the run)"
	}
	p.Landlock.Rules = slices.DeleteFunc(p.Landlock.Rules, func(r PathRule) bool {
		return r.From == "private /tmp" || r.From == "private /dev/shm" || r.From == privateHomeWhy
	})
	exec := uint64(fsExecute)
	if p.Exec.Restricted {
		exec = 0
	}
	p.Landlock.Rules = append(p.Landlock.Rules, PathRule{Path: tmp, Access: (writeRights | exec) & p.Landlock.HandledFS,
		Rights: rightsString((writeRights | exec) & p.Landlock.HandledFS), From: "the run's own TMPDIR (removed after the run)"})
	// The host's /proc would show every process's command line (and
	// the kernel state the namespaces tier hides), and Landlock cannot
	// grant a process only its own /proc/self: only files about the
	// machine are readable.
	p.Landlock.Rules = slices.DeleteFunc(p.Landlock.Rules, func(r PathRule) bool { return r.From == "private /proc" })
	for _, f := range landlockProc {
		// Not probed: the init skips a rule whose path is missing.
		access := readRights & fileRights & p.Landlock.HandledFS
		p.Landlock.Rules = append(p.Landlock.Rules, PathRule{Path: f, Access: access, Rights: rightsString(access), From: "the host's " + f + " (no other /proc file: no /proc/self, no other process)"})
	}
	b.unsweptProtected()
	p.Landlock.PortRules = nil
	if len(b.perms.Bind) > 0 {
		// Its seccomp filter refuses bind and listen: a listening socket
		// here would be on the host's own addresses, reachable from the
		// host and beyond, not from the sandbox only.
		b.errs = append(b.errs, fmt.Sprintf("network.bind (%s, from %s) needs the namespaces tier: without a network namespace of its own, a port the command listens on is the host's, reachable from outside the sandbox", strings.Join(policyengine.Values(b.perms.Bind), ", "), strings.Join(b.perms.Bind[0].From, ", ")))
	}
	// A HOME outside every grant answers EACCES where the namespaces
	// tier's new root answers ENOENT, and git (among others) takes an
	// unreadable ~/.gitconfig for a fatal error: such a run gets the
	// run's TMPDIR as its home.
	home := !b.homeGranted()
	for i, kv := range p.Env {
		switch {
		case strings.HasPrefix(kv, "TMPDIR="):
			p.Env[i] = "TMPDIR=" + tmp
		case strings.HasPrefix(kv, "HOME=") && home:
			p.Env[i] = "HOME=" + tmp
		}
	}
	b.landlockHomeCaches()
	if p.Proxy != nil {
		addr := b.spec.HostProxy
		if !addr.IsValid() {
			addr = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 0)
		}
		p.Proxy.Addrs, p.Proxy.Port, p.Proxy.DNSPort = []string{addr.String()}, int(addr.Port()), 0
		url := "http://" + addr.String()
		// Without a network namespace of its own the sandbox's loopback
		// is the host's, which only the proxy reaches for it: where a
		// grant names a port there (preset:loopback:PORT), loopback is
		// no exception to HTTP_PROXY.
		loopback := len(b.perms.LoopbackPorts()) > 0
		for i, kv := range p.Env {
			k, _, _ := strings.Cut(kv, "=")
			switch strings.ToUpper(k) {
			case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY":
				p.Env[i] = k + "=" + url
			case "NO_PROXY":
				if loopback {
					p.Env[i] = k + "="
				}
			}
		}
	}
	// Nothing can be bound read-only: the protected paths that exist are
	// checked after the run instead (the git sweep, from the top of each
	// writable root down), and what must stay as it is may not be inside
	// a writable root at all.
	p.SweepKnown, p.Protected = p.Protected, nil
	for _, m := range b.nsMounts {
		if m.Source == "/dev/null" && strings.HasPrefix(m.Why, sshSecretWhy) {
			b.errs = append(b.errs, fmt.Sprintf("a grant reaches %s, which may hold a private ssh key: the namespaces tier shows it empty, the landlock tier cannot hide it inside a grant (name the file or ~/.ssh in a grant if the command needs it, or narrow the grant)", printable.String(m.Target)))
		}
	}
	for _, k := range b.spec.Keep {
		for _, w := range b.writableReal {
			if isUnder(k, w) || isUnder(w, k) {
				b.errs = append(b.errs, fmt.Sprintf("%s is inside the writable %s: the landlock tier has no read-only bind to keep it as it is (move it out of the writable roots, or run where user namespaces are allowed)", printable.String(k), printable.String(w)))
				break
			}
		}
	}
}

// envHome is the plan's $HOME, "" when it has none.
func (b *builder) envHome() string {
	home := ""
	for _, kv := range b.plan.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return home
}

// homeGranted reports whether a read or write grant covers $HOME (or
// there is none to cover).
func (b *builder) homeGranted() bool {
	home := b.envHome()
	if home == "" {
		return true
	}
	for _, list := range [][]policyengine.Entry{b.perms.Read, b.perms.Write} {
		for _, e := range list {
			if g, err := policyengine.CompileGlob(e.Value); err == nil && isUnder(home, g.Base()) {
				return true
			}
		}
	}
	return false
}

// landlockProc are the /proc files the landlock tier grants: what
// programs read about the machine.
var landlockProc = []string{"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/uptime", "/proc/version", "/proc/filesystems"}

// unsweptProtected refuses the protected paths inside writable roots that
// the git sweep does not check after the run (it checks git folders and
// the single-name start-up files and agent folders): without a read-only
// bind nothing would keep the command from changing them (~/.local/bin,
// ~/.config/git/config, ...).
func (b *builder) unsweptProtected() {
	names := map[string]bool{}
	for _, e := range policyengine.ProtectedPaths {
		if !e.Home && !strings.Contains(e.Path, "/") {
			names[e.Path] = true
		}
	}
	for _, p := range b.plan.Protected {
		// The sweep also checks Mercurial's and Jujutsu's repository configs.
		other := strings.HasSuffix(p, "/.hg/hgrc") || strings.HasSuffix(p, "/.jj/repo/config.toml")
		if names[path.Base(p)] || other || b.gitPaths[p] || strings.Contains(p, "/.git/") || strings.HasSuffix(p, "/.git") {
			continue
		}
		if slices.ContainsFunc(b.spec.Keep, func(k string) bool { return isUnder(p, k) }) {
			continue // refused below, as a kept path
		}
		b.errs = append(b.errs, fmt.Sprintf("%s is inside a writable root: the namespaces tier keeps it read-only, the landlock tier has no read-only bind and the git sweep does not check it (narrow the write grant, or run where user namespaces are allowed)", printable.String(p)))
	}
}

// landlockExecDetail says why the landlock tier cannot enforce an exec
// allowlist: Landlock checks execute on execve and on the loader's own
// open, never on mmap, and without mounts nothing is noexec.
const landlockExecDetail = "execve only: Landlock's execute right stops the command from running a program outside the list directly or through a shell, but not through the dynamic loader (ld.so FILE) or LD_PRELOAD, which map any readable file; without mounts nothing makes the written files unmappable"

// landlockProtections is the enforcement table of the landlock tier.
func (b *builder) landlockProtections(why string) {
	f := b.facts
	p := b.plan
	p.Protections = nil
	add := func(name string, ok bool, detail string) {
		p.Protections = append(p.Protections, Protection{Name: name, Enforced: ok, Detail: detail})
	}
	add("tier", true, "landlock tier: no namespaces ("+why+"); Landlock, seccomp and no_new_privs on the host's own namespaces")
	add("landlock-fs", f.LandlockABI >= 1, orText(f.LandlockErr, fmt.Sprintf("Landlock ABI %d rules on the host's own file system: only the grants, the system baseline (the host's /etc files themselves), the host's /proc read-only, a few devices and the run's TMPDIR", f.LandlockABI)))
	add("landlock-scope", f.LandlockABI >= 6, landlockDetail(f.LandlockABI, 6, "no signals to, and no abstract UNIX sockets of, processes outside the sandbox; with no PID namespace this is what keeps the command from signalling the host's processes"))
	add("seccomp", f.Seccomp, orText(map[bool]string{false: "seccomp filters are unavailable"}[f.Seccomp], "the namespaces tier's table, and a second filter: no bind, listen or TCP Fast Open, no seccomp listener of the command's own"))
	add("no-new-privs", true, "set before exec")
	add("capabilities", true, "bounding, ambient, permitted, effective and inheritable sets emptied (securebits locked when corral runs as root)")
	net := "no socket at all but socketpair: no TCP, UDP, UNIX (the host's sockets) or netlink"
	if len(b.perms.Network) > 0 {
		net = fmt.Sprintf("sockets: only TCP over IPv4 and IPv6 (no UDP, raw, UNIX or netlink); connect: only to corral's egress proxy at %s, made by corral itself (seccomp user notification; the command's own socket is replaced by corral's), enforcing %d network.allow rule(s); no DNS; Landlock refuses every direct TCP connect and bind", strings.Join(p.Proxy.Addrs, ", "), len(b.perms.Network))
	}
	add("network", f.Seccomp, net)
	add("landlock-net", f.LandlockABI >= 4, landlockDetail(f.LandlockABI, 4, "no direct TCP connect or bind at all (a second layer under the seccomp filter)"))
	add("process-cleanup", true, "the shim and the init are child subreapers: whatever the command double-forks stays below them, and all of it is killed when the command ends or times out; if corral itself is killed with SIGKILL, the shim kills it all too (its parent-death signal)")
	add("protected-paths", true, "checked after the run, not kept read-only (no mounts in this tier): the git sweep quarantines changed git config and hooks and the start-up files and agent folders (.bashrc, .envrc, .vscode, ...) the command made or changed, from the top of each writable root down; a host tool running git in the same repository while the command runs could still read what it wrote")
	if p.Exec.Restricted {
		add("exec-allowlist", false, landlockExecDetail)
		add("memfd-noexec", f.Seccomp, "seccomp refuses memfd_create")
	}
}
