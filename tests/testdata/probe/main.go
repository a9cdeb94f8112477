//go:build linux

// Command probe is the attack helper of corral's end-to-end tests. The
// tests build it as a static binary and run it inside the sandbox, where it
// tries one thing the sandbox must refuse and says what happened:
//
//	OK <detail>          the attempt worked (exit 0)
//	ERR <ERRNO> <detail> the attempt failed (exit 1)
//
// Usage errors exit 2. It has no dependency on anything inside the sandbox
// (no libc, no interpreter), so it runs wherever it may be executed.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	f, ok := commands[cmd]
	if !ok {
		usage()
	}
	f(args)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: probe COMMAND [ARG]...")
	os.Exit(2)
}

func need(args []string, n int) {
	if len(args) < n {
		usage()
	}
}

// ok reports success and exits 0.
func ok(format string, a ...any) {
	fmt.Printf("OK "+format+"\n", a...)
	os.Exit(0)
}

// fail reports err (with its errno name when there is one) and exits 1.
func fail(what string, err error) {
	name := "EUNKNOWN"
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			name = n
		}
	} else if err != nil && strings.Contains(err.Error(), "timeout") {
		name = "ETIMEDOUT"
	}
	fmt.Printf("ERR %s %s: %v\n", name, what, err)
	os.Exit(1)
}

// check fails on a non-nil error and reports success otherwise.
func check(what string, err error) {
	if err != nil {
		fail(what, err)
	}
	ok("%s", what)
}

func rawErr(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

var commands = map[string]func([]string){
	// Files.
	"read": func(a []string) {
		need(a, 1)
		data, err := os.ReadFile(a[0])
		if err != nil {
			fail("read "+a[0], err)
		}
		ok("read %s: %s", a[0], data)
	},
	"write": func(a []string) {
		need(a, 2)
		check("write "+a[0], os.WriteFile(a[0], []byte(a[1]), 0o644))
	},
	"copy": func(a []string) {
		// copy SRC DST: DST is created executable (0755).
		need(a, 2)
		data, err := os.ReadFile(a[0])
		if err != nil {
			fail("read "+a[0], err)
		}
		check("copy to "+a[1], os.WriteFile(a[1], data, 0o755))
	},
	"rename": func(a []string) {
		need(a, 2)
		check("rename "+a[0]+" "+a[1], unix.Rename(a[0], a[1]))
	},
	"link": func(a []string) {
		need(a, 2)
		check("link "+a[0]+" "+a[1], unix.Link(a[0], a[1]))
	},
	"echo": func(a []string) {
		ok("%s", strings.Join(a, " "))
	},
	"mode":  modeCommand,
	"xattr": xattrCommand,

	// Sockets and network.
	"connect-unix": func(a []string) {
		need(a, 1)
		c, err := net.DialTimeout("unix", a[0], 2*time.Second)
		if err != nil {
			fail("connect "+a[0], err)
		}
		c.Write([]byte("PROBE\n"))
		c.Close()
		ok("connected to %s", a[0])
	},
	"tcp": func(a []string) {
		need(a, 1)
		c, err := net.DialTimeout("tcp", a[0], 2*time.Second)
		if err != nil {
			fail("tcp "+a[0], err)
		}
		c.Write([]byte("PROBE\n"))
		c.Close()
		ok("tcp connected to %s", a[0])
	},
	// tcp-talk connects, sends a line and reads what comes back: under
	// transparent egress a refused connect is accepted by the proxy and
	// then reset, which only a read sees.
	"tcp-talk": func(a []string) {
		need(a, 1)
		c, err := net.DialTimeout("tcp", a[0], 2*time.Second)
		if err != nil {
			fail("tcp "+a[0], err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("PROBE\r\n\r\n"))
		b := make([]byte, 64)
		n, err := c.Read(b)
		if err != nil {
			fail("tcp read "+a[0], err)
		}
		ok("tcp read %q from %s", b[:n], a[0])
	},
	"udp": func(a []string) {
		need(a, 1)
		c, err := net.Dial("udp", a[0])
		if err != nil {
			fail("udp "+a[0], err)
		}
		for i := 0; i < 3; i++ {
			if _, err := c.Write([]byte("PROBE\n")); err != nil {
				fail("udp send "+a[0], err)
			}
		}
		c.Close()
		ok("udp sent to %s", a[0])
	},
	"dns": func(a []string) {
		need(a, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupHost(ctx, a[0])
		if err != nil {
			fail("dns "+a[0], err)
		}
		ok("dns %s: %s", a[0], strings.Join(addrs, " "))
	},
	"ifaces": func(a []string) {
		// The interface names in /proc/net/dev (net.Interfaces needs a
		// netlink socket, which is not what this probe is about).
		data, err := os.ReadFile("/proc/net/dev")
		if err != nil {
			fail("read /proc/net/dev", err)
		}
		var names []string
		for _, line := range strings.Split(string(data), "\n") {
			if name, _, found := strings.Cut(line, ":"); found {
				names = append(names, strings.TrimSpace(name))
			}
		}
		ok("%s", strings.Join(names, " "))
	},
	"http": httpHead,
	"bind-tcp": func(a []string) {
		// bind-tcp ADDR:PORT: bind and listen, with raw syscalls (Go's
		// listeners try MPTCP first).
		need(a, 1)
		ap, err := netip.ParseAddrPort(a[0])
		if err != nil {
			usage()
		}
		fd, sa := tcpSocket(ap.Addr())
		if err := unix.Bind(fd, sockaddr(sa, ap)); err != nil {
			fail("bind "+a[0], err)
		}
		check("listen on "+a[0], unix.Listen(fd, 1))
	},
	"listen-tcp": func(a []string) {
		// listen-tcp ADDR: listen() on an unbound socket of ADDR's
		// family, which binds an ephemeral port implicitly.
		need(a, 1)
		ip, err := netip.ParseAddr(a[0])
		if err != nil {
			usage()
		}
		fd, _ := tcpSocket(ip)
		if err := unix.Listen(fd, 1); err != nil {
			fail("listen without bind", err)
		}
		got, _ := unix.Getsockname(fd)
		ok("listening without bind: %v", got)
	},
	"fds": func(a []string) {
		// Lists the open file descriptors and what they are.
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			fail("read /proc/self/fd", err)
		}
		for _, e := range entries {
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			fmt.Printf("fd %s %s\n", e.Name(), target)
		}
		ok("%d fds", len(entries))
	},
	"socket": func(a []string) {
		// socket DOMAIN TYPE PROTO, numbers (domain may carry high bits).
		need(a, 3)
		d, t, p := num(a[0]), num(a[1]), num(a[2])
		fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(d), uintptr(t), uintptr(p))
		if e != 0 {
			fail(fmt.Sprintf("socket(%#x, %#x, %#x)", d, t, p), e)
		}
		unix.Close(int(fd))
		ok("socket(%#x, %#x, %#x)", d, t, p)
	},

	// Executing what is not allowed.
	"memfd-exec": memfdExec,
	"memfd-ldso": memfdLdso,
	"exec": func(a []string) {
		need(a, 1)
		err := unix.Exec(a[0], a, os.Environ())
		fail("execve "+a[0], err)
	},

	// Privileges and dangerous syscalls.
	"unshare": func(a []string) {
		need(a, 1)
		check("unshare "+a[0], unix.Unshare(nsFlag(a[0])))
	},
	"open-tree-attr": func(a []string) {
		// open_tree_attr(AT_FDCWD, "/", 0, NULL, 0) by number (467):
		// newer than some libseccomp releases, which cannot name it.
		root, _ := syscall.BytePtrFromString("/")
		fd, _, e := syscall.Syscall6(467, uintptr(0xffffff9c), uintptr(unsafe.Pointer(root)), 0, 0, 0, 0)
		if e != 0 {
			fail("open_tree_attr", e)
		}
		ok("open_tree_attr fd %d", fd)
	},
	"unshare-x32": func(a []string) {
		// unshare-x32 NS: unshare through the x32 system-call number
		// (0x40000000 | 272), which a filter written for x86_64 numbers
		// alone would not match.
		need(a, 1)
		_, _, e := syscall.RawSyscall(0x40000000|unix.SYS_UNSHARE, uintptr(nsFlag(a[0])), 0, 0)
		if e != 0 {
			fail("unshare-x32 "+a[0], e)
		}
		ok("unshare-x32 %s", a[0])
	},
	"clone": func(a []string) {
		need(a, 1)
		flags := uintptr(nsFlag(a[0]) | int(unix.SIGCHLD))
		pid, _, e := unix.RawSyscall6(unix.SYS_CLONE, flags, 0, 0, 0, 0, 0)
		if e != 0 {
			fail("clone "+a[0], e)
		}
		if pid == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		var ws unix.WaitStatus
		unix.Wait4(int(pid), &ws, unix.WALL, nil)
		ok("clone %s made child %d", a[0], pid)
	},
	"clone3": func(a []string) {
		// struct clone_args: flags, pidfd, child_tid, parent_tid,
		// exit_signal, stack, stack_size, tls.
		args := [8]uint64{uint64(unix.CLONE_NEWUSER), 0, 0, 0, uint64(unix.SIGCHLD)}
		pid, _, e := unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args), 0)
		if e != 0 {
			fail("clone3", e)
		}
		if pid == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		ok("clone3 made child %d", pid)
	},
	"setns": func(a []string) {
		fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY, 0)
		if err != nil {
			fail("open /proc/self/ns/net", err)
		}
		check("setns", unix.Setns(fd, 0))
	},
	"mount": func(a []string) {
		dir := "/tmp"
		if len(a) > 0 {
			dir = a[0]
		}
		check("mount tmpfs on "+dir, unix.Mount("tmpfs", dir, "tmpfs", 0, ""))
	},
	"fsopen": func(a []string) {
		fd, err := unix.Fsopen("tmpfs", 0)
		if err == nil {
			unix.Close(fd)
		}
		check("fsopen tmpfs", err)
	},
	"ptrace": func(a []string) {
		need(a, 1)
		pid := os.Getppid()
		if a[0] != "parent" {
			pid = num(a[0])
		}
		if pid == 1 {
			sandboxOnly()
		}
		// PTRACE_SEIZE, not ATTACH: it does not stop the target, so a
		// broken sandbox cannot leave the test (or the host) stopped.
		// The tracee is released when the probe exits.
		check(fmt.Sprintf("ptrace seize %d", pid), unix.PtraceSeize(pid))
	},
	"fastopen": func(a []string) {
		// fastopen ADDR:PORT: connect by TCP Fast Open (sendto with
		// MSG_FASTOPEN), which a filter on connect alone misses.
		need(a, 1)
		ap, err := netip.ParseAddrPort(a[0])
		if err != nil {
			usage()
		}
		fd, family := tcpSocket(ap.Addr())
		check("fastopen "+a[0], unix.Sendto(fd, []byte("PROBE\n"), unix.MSG_FASTOPEN, sockaddr(family, ap)))
	},
	"stdin-reconnect": func(a []string) {
		// stdin-reconnect ADDR:PORT [tfo]: disconnect fd 0 (AF_UNSPEC)
		// and connect it to ADDR, or send to it by TCP Fast Open: a
		// socket handed in from outside would be in the host's network.
		need(a, 1)
		ap, err := netip.ParseAddrPort(a[0])
		if err != nil {
			usage()
		}
		var st unix.Stat_t
		if unix.Fstat(0, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			ok("stdin is not a socket (mode %o)", st.Mode&unix.S_IFMT)
			return
		}
		var unspec unix.RawSockaddrAny // AF_UNSPEC: 0
		unix.Syscall(unix.SYS_CONNECT, 0, uintptr(unsafe.Pointer(&unspec)), unsafe.Sizeof(unspec.Addr))
		family := unix.AF_INET
		if ap.Addr().Is6() {
			family = unix.AF_INET6
		}
		if len(a) > 1 && a[1] == "tfo" {
			check("fastopen on stdin to "+a[0], unix.Sendto(0, []byte("PROBE\n"), unix.MSG_FASTOPEN, sockaddr(family, ap)))
			return
		}
		check("connect stdin to "+a[0], unix.Connect(0, sockaddr(family, ap)))
	},
	"seccomp-listener": func(a []string) {
		// seccomp-listener: install an allow-all filter with a listener
		// of its own (its supervisor would be asked before corral's).
		prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
		fprog := unix.SockFprog{Len: 1, Filter: &prog[0]}
		unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
		_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
		if e != 0 {
			fail("seccomp filter with a listener", e)
		}
		ok("seccomp filter with a listener installed")
	},
	"setflags": func(a []string) {
		// setflags FILE: FS_IOC_SETFLAGS (nodump) through an fd opened
		// only for reading.
		need(a, 1)
		f, err := os.Open(a[0])
		if err != nil {
			fail("open "+a[0], err)
		}
		flags := 0x40 // FS_NODUMP_FL
		check("setflags "+a[0], unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags))
	},
	"dgram-pair": func(a []string) {
		// dgram-pair PATH: a datagram socketpair's sendto to a UNIX
		// socket named by path.
		need(a, 1)
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err != nil {
			fail("socketpair", err)
		}
		check("sendto "+a[0], unix.Sendto(fds[0], []byte("PROBE\n"), 0, &unix.SockaddrUnix{Name: a[0]}))
	},
	"caps": func(a []string) {
		// caps: the capability sets, the bounding set's size and
		// no_new_privs, for the landlock tier's test (no /proc/self).
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			fail("capget", err)
		}
		bnd, amb := 0, 0
		for c := 0; c < 64; c++ {
			if v, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil && v == 1 {
				bnd++
			}
			if v, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); err == nil && v == 1 {
				amb++
			}
		}
		nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		ok("caps eff=%x prm=%x inh=%x bnd=%d amb=%d nnp=%d", uint64(data[1].Effective)<<32|uint64(data[0].Effective),
			uint64(data[1].Permitted)<<32|uint64(data[0].Permitted), uint64(data[1].Inheritable)<<32|uint64(data[0].Inheritable), bnd, amb, nnp)
	},
	"process-vm-readv": func(a []string) {
		need(a, 1)
		var buf [8]byte
		local := []unix.Iovec{{Base: &buf[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: 0x400000, Len: 8}}
		_, err := unix.ProcessVMReadv(num(a[0]), local, remote, 0)
		check("process_vm_readv "+a[0], err)
	},
	"bpf": func(a []string) {
		// BPF_MAP_CREATE of a one-entry array map.
		attr := [16]uint32{2 /* ARRAY */, 4, 4, 1}
		fd, _, e := unix.Syscall(unix.SYS_BPF, 0, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
		if e == 0 {
			unix.Close(int(fd))
		}
		check("bpf(BPF_MAP_CREATE)", rawErr(e))
	},
	"io_uring": func(a []string) {
		var params [30]uint32 // struct io_uring_params is 120 bytes
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 8, uintptr(unsafe.Pointer(&params)), 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		check("io_uring_setup", rawErr(e))
	},
	"keyctl": func(a []string) {
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 1, 0, 0)
		check("keyctl(KEYCTL_GET_KEYRING_ID)", err)
	},
	"add_key": func(a []string) {
		_, err := unix.AddKey("user", "corral-probe", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		check("add_key", err)
	},
	"perf": func(a []string) {
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, 0)
		if err == nil {
			unix.Close(fd)
		}
		check("perf_event_open", err)
	},
	"userfaultfd": func(a []string) {
		fd, _, e := unix.Syscall(unix.SYS_USERFAULTFD, 0, 0, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		check("userfaultfd", rawErr(e))
	},
	"ioctl": func(a []string) {
		// ioctl FD REQUEST: request may carry high garbage bits.
		need(a, 2)
		c := byte('#')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(num(a[0])), uintptr(num64(a[1])), uintptr(unsafe.Pointer(&c)))
		check(fmt.Sprintf("ioctl(%s, %#x)", a[0], num64(a[1])), rawErr(e))
	},
	"tiocsti": func(a []string) {
		// Push "id\n" into the terminal on stdin.
		for _, c := range []byte("id\n") {
			if err := unix.IoctlSetPointerInt(0, unix.TIOCSTI, int(c)); err != nil {
				// IoctlSetPointerInt passes an int32; TIOCSTI reads a char.
				fail("ioctl(0, TIOCSTI)", err)
			}
		}
		ok("ioctl(0, TIOCSTI) injected input")
	},
	"tty": func(a []string) {
		// Reports the controlling terminal: tty_nr from /proc/self/stat
		// and whether /dev/tty opens.
		// (The landlock tier grants no /proc/self: tty_nr=? there.)
		ttyNr := "?"
		if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
			s := string(stat)
			fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
			ttyNr = fields[4] // state ppid pgrp session tty_nr
		}
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			fmt.Printf("tty_nr=%s\n", ttyNr)
			fail("open /dev/tty", err)
		}
		f.Close()
		ok("tty_nr=%s /dev/tty opened", ttyNr)
	},
	"status": func(a []string) {
		data, err := os.ReadFile("/proc/self/status")
		if err != nil {
			fail("read /proc/self/status", err)
		}
		fmt.Print(string(data))
		ok("status")
	},

	// Processes.
	"sleep": func(a []string) {
		// sleep MARKER: the marker makes the process findable from
		// the host.
		time.Sleep(time.Hour)
	},
	"daemon": func(a []string) {
		// daemon MARKER: start a new session that outlives us, with a
		// child that runs "probe sleep MARKER".
		need(a, 1)
		exe, _ := os.Executable()
		p, err := os.StartProcess(exe, []string{exe, "sleep", a[0]}, &os.ProcAttr{
			Files: []*os.File{nil, nil, nil},
			Sys:   &syscall.SysProcAttr{Setsid: true},
		})
		if err != nil {
			fail("start daemon", err)
		}
		pid := p.Pid
		p.Release()
		ok("daemon %d", pid)
	},
	"alloc": func(a []string) {
		// alloc MB: allocate and touch MB mebibytes.
		need(a, 1)
		n := num(a[0])
		var keep [][]byte
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(j)
			}
			keep = append(keep, b)
		}
		ok("allocated %d MiB (%d)", n, len(keep))
	},
	"spawn": func(a []string) {
		// spawn N: start N sleeping children; reports how many started.
		need(a, 1)
		exe, _ := os.Executable()
		var procs []*os.Process
		defer func() {
			for _, p := range procs {
				p.Kill()
				p.Wait()
			}
		}()
		for i := 0; i < num(a[0]); i++ {
			p, err := os.StartProcess(exe, []string{exe, "sleep", "spawned"}, &os.ProcAttr{})
			if err != nil {
				fmt.Printf("ERR started %d: %v\n", i, err)
				return
			}
			procs = append(procs, p)
		}
		fmt.Printf("OK spawned %d\n", len(procs))
	},
}
