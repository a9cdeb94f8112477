package sandbox

import (
	"fmt"
	"strings"

	"corral.dev/corral/sandbox/seccomp"
)

// protections lists what is enforced.
func (b *builder) protections() {
	f := b.facts
	add := func(name string, ok bool, detail string) {
		b.plan.Protections = append(b.plan.Protections, Protection{Name: name, Enforced: ok, Detail: detail})
	}
	if f.OS == "darwin" {
		// macOS: one Seatbelt profile (package seatbelt) enforces files,
		// programs and network; none of the Linux features apply.
		net := "no network.allow rule: no outbound connection at all (no UDP, no DNS, no UNIX socket)"
		if len(b.perms.Network) > 0 {
			net = fmt.Sprintf("outbound TCP only to corral's egress proxy on 127.0.0.1 (a port chosen per run), enforcing %d network.allow rule(s); no UDP, no DNS, no UNIX socket", len(b.perms.Network))
		}
		add("seatbelt", true, "sandbox-exec with a deny-by-default profile rendered from the permissions")
		add("filesystem", true, "reads only fs.read, fs.write, the macOS system baseline and a private TMPDIR; writes only fs.write and that TMPDIR; protected paths inside writable roots (.git/hooks, .git/config, shell start-up files) read-only")
		add("network", true, net)
		if b.plan.Exec.Restricted {
			add("exec-allowlist", true, "only the allowed programs (and the shells /bin/sh starts) may run; code is mapped only from the system's library folders")
		}
		add("signals", true, "signals and process information only within the sandbox")
		add("terminal", true, "the command runs in its own session without a controlling terminal; the terminal it inherits cannot be controlled (no ioctl, so no TIOCSTI)")
		add("process-cleanup", false, "macOS has no PID namespace: when the command ends or times out corral kills its process group, but a process that left the group (setsid) can outlive the run")
		return
	}
	add("namespaces", f.UserNSErr == "", orText(f.UserNSErr, "user, mount, pid, network, ipc, uts and cgroup namespaces"))
	add("landlock-fs", f.LandlockABI >= 1, orText(f.LandlockErr, fmt.Sprintf("Landlock ABI %d filesystem rules", f.LandlockABI)))
	netDetail, llNet := "private network namespace with only lo: no network; its resolver (127.0.0.1:53, corral's) answers every lookup with \"no such name\" at once", "no TCP connect and no explicit TCP bind (the network namespace has no way out anyway)"
	if len(b.perms.Network) > 0 {
		netDetail = fmt.Sprintf("private network namespace with only lo; the one way out is corral's egress proxy at 127.0.0.1:%d and [::1]:%d, enforcing %d network.allow rule(s). Transparent egress: the sandbox's resolver (127.0.0.1:%d) answers every name with an address of corral's own (198.18.0.0/15), and corral's seccomp supervisor connects every TCP socket aimed outside the sandbox to the proxy, which decides the name (or the TLS SNI, the HTTP Host, the bare address) as a tunnel; UDP goes nowhere but the resolver", ProxyPort, ProxyPort, len(b.perms.Network), DNSPort)
		llNet = fmt.Sprintf("no direct TCP connect but to the proxy port %d (corral's supervisor makes the connects that leave the sandbox, on the command's own socket); no explicit TCP bind (listen() on an unbound socket still gets a port, inside the sandbox's own namespace only)", ProxyPort)
	}
	if ports, any := b.perms.BindPorts(); any {
		llNet = "network.bind \"*\": TCP bind and connect on any port, inside the sandbox's own network namespace only (corral's supervisor still sends every connect aimed outside to the proxy)"
	} else if len(ports) > 0 {
		llNet = strings.Replace(llNet, "no explicit TCP bind", fmt.Sprintf("TCP bind and connect on the network.bind port(s) %s, reachable from inside the sandbox only; no other explicit TCP bind", joinInts(ports)), 1)
		llNet = strings.Replace(llNet, "no TCP connect and", "no TCP connect but to those ports and", 1)
	}
	add("landlock-net", f.LandlockABI >= 4, landlockDetail(f.LandlockABI, 4, llNet))
	add("landlock-scope", f.LandlockABI >= 6, landlockDetail(f.LandlockABI, 6, "no signals or abstract UNIX sockets beyond the sandbox"))
	add("seccomp", f.Seccomp, orText(map[bool]string{false: "seccomp filters are unavailable"}[f.Seccomp], fmt.Sprintf("%d rules refusing namespaces, mounts, ptrace, bpf, io_uring, keyrings, TIOCSTI, set-id modes, extended attributes and more", len(seccomp.Table()))))
	add("no-new-privs", true, "set before exec")
	// Without a user namespace there is nothing to drop capabilities in,
	// no network namespace and no mount namespace: say why, not what.
	needsNS := func(what string) string {
		if f.UserNSErr != "" {
			return "needs the user namespace that is refused (see namespaces)"
		}
		return what
	}
	add("capabilities", f.UserNSErr == "", needsNS("bounding, ambient, permitted, effective and inheritable sets emptied; securebits locked"))
	add("network", f.UserNSErr == "", needsNS(netDetail))
	add("private-mounts", f.UserNSErr == "", needsNS("new root holding only granted paths, private /proc, /tmp and /dev; host UNIX sockets hidden"))
	if b.plan.Exec.Restricted {
		add("exec-allowlist", f.LandlockABI >= 1, orText(landlockWhy(f), "only the allowed programs and their interpreters are executable; granted folders, and the library folders that hold programs, are mounted noexec"))
		add("memfd-noexec", f.Seccomp, orText(map[bool]string{false: "needs seccomp, which this kernel lacks"}[f.Seccomp], "seccomp refuses memfd_create: a memfd holds a copy of any binary, and even a sealed one can be run through the dynamic loader"))
	}
}

// landlockWhy says why the exec allowlist cannot be enforced: it needs
// Landlock's execute right.
func landlockWhy(f *Facts) string {
	if f.LandlockABI >= 1 {
		return ""
	}
	return "needs Landlock, which is unavailable (see landlock-fs)"
}

func (b *builder) failClosed() error {
	var missing []string
	for _, p := range b.plan.Protections {
		// Without a PID namespace, Landlock's scoping is what keeps the
		// command's signals inside the sandbox.
		landlockTier := b.plan.Tier.Name == TierLandlock && p.Name == "landlock-scope"
		if !p.Enforced && (required[p.Name] || landlockTier) {
			missing = append(missing, p.Name+": "+p.Detail)
		}
	}
	if len(missing) == 0 || b.spec.BestEffort {
		return nil
	}
	if t := b.plan.Tier; t.Name == TierLandlock {
		why := orText(t.Why, b.facts.UserNSErr)
		return fmt.Errorf("%w: in the landlock tier (%s): %s (use --best-effort to run without it)", ErrProtection, why, strings.Join(missing, "; "))
	}
	return fmt.Errorf("%w: %s (use --best-effort to run without it)", ErrProtection, strings.Join(missing, "; "))
}

func landlockDetail(abi, need int, what string) string {
	if abi >= need {
		return what
	}
	return fmt.Sprintf("needs Landlock ABI %d, the kernel has %d", need, abi)
}

func orText(err, ok string) string {
	if err != "" {
		return err
	}
	return ok
}
