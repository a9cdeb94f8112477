//go:build linux

package main

// The helpers the attacks in main.go share: a proxy client, raw sockets,
// running a memfd, numbers and namespace flags.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// httpHead sends one request head, as a client of a proxy would:
// http ADDR METHOD TARGET [HOST]. TARGET goes on the request line exactly
// as given, so notations a client would normalise reach the proxy as
// written. A 2xx answer prints OK and the status line; any other answer
// prints "ERR HTTP<status> ..." with the X-Corral-Reason header.
func httpHead(a []string) {
	need(a, 3)
	c, err := net.DialTimeout("tcp", a[0], 2*time.Second)
	if err != nil {
		fail("connect "+a[0], err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	head := a[1] + " " + a[2] + " HTTP/1.1\r\n"
	if len(a) > 3 {
		head += "Host: " + a[3] + "\r\n"
	}
	head += "User-Agent: corral-probe\r\n\r\n"
	if _, err := io.WriteString(c, head); err != nil {
		fail("send to "+a[0], err)
	}
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil {
		fail(a[1]+" "+a[2]+": no answer", err)
	}
	status = strings.TrimSpace(status)
	reason := ""
	for {
		l, err := br.ReadString('\n')
		l = strings.TrimRight(l, "\r\n")
		if err != nil || l == "" {
			break
		}
		if k, v, found := strings.Cut(l, ":"); found && strings.EqualFold(k, "X-Corral-Reason") {
			reason = strings.TrimSpace(v)
		}
	}
	f := strings.Fields(status)
	if len(f) >= 2 && strings.HasPrefix(f[1], "2") {
		ok("%s %s: %s", a[1], a[2], status)
	}
	code := "HTTP"
	if len(f) >= 2 {
		code += f[1]
	}
	fmt.Printf("ERR %s %s %s: %s (%s)\n", code, a[1], a[2], status, reason)
	os.Exit(1)
}

// tcpSocket opens a plain TCP socket of ip's family.
func tcpSocket(ip netip.Addr) (int, int) {
	family := unix.AF_INET
	if ip.Is6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM, unix.IPPROTO_TCP)
	if err != nil {
		fail("socket", err)
	}
	return fd, family
}

func sockaddr(family int, ap netip.AddrPort) unix.Sockaddr {
	if family == unix.AF_INET6 {
		return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
}

// sandboxOnly refuses to go on unless PID 1 is corral's init, so that an
// attack on PID 1 never reaches the host's init when the sandbox is
// broken.
func sandboxOnly() {
	cmdline, _ := os.ReadFile("/proc/1/cmdline")
	if !strings.Contains(string(cmdline), "corral") {
		fmt.Printf("ERR ENOTSANDBOX PID 1 is not corral's init (%q): no PID namespace?\n", cmdline)
		os.Exit(1)
	}
}

// memfdExec copies a binary into a memfd and executes it: memfd-exec PATH
// MODE [ARG]... where MODE is none, exec (MFD_EXEC) or seal
// (MFD_NOEXEC_SEAL). It tries execveat(AT_EMPTY_PATH), then
// execve(/proc/self/fd/N). On success the copied program runs with ARGs.
func memfdExec(a []string) {
	need(a, 2)
	flags := 0
	switch a[1] {
	case "none":
	case "exec":
		flags = unix.MFD_EXEC
	case "seal":
		flags = unix.MFD_NOEXEC_SEAL
	default:
		usage()
	}
	data, err := os.ReadFile(a[0])
	if err != nil {
		fail("read "+a[0], err)
	}
	fd, err := unix.MemfdCreate("corral-probe", flags)
	if err != nil {
		fail("memfd_create("+a[1]+")", err)
	}
	if _, err := unix.Write(fd, data); err != nil {
		fail("write memfd", err)
	}
	unix.Fchmod(fd, 0o755)
	argv := append([]string{a[0]}, a[2:]...)
	argvp, envp := cStrings(argv), cStrings(os.Environ())
	empty, _ := unix.BytePtrFromString("")
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	err2 := unix.Exec("/proc/self/fd/"+strconv.Itoa(fd), argv, os.Environ())
	fail(fmt.Sprintf("exec memfd (execveat: %v)", e), err2)
}

// cStrings makes a NULL-terminated array of C strings.
func cStrings(ss []string) []*byte {
	out := make([]*byte, 0, len(ss)+1)
	for _, s := range ss {
		p, err := unix.BytePtrFromString(s)
		if err != nil {
			usage()
		}
		out = append(out, p)
	}
	return append(out, nil)
}

// memfdLdso copies a program into a memfd sealed against exec
// (MFD_NOEXEC_SEAL, which the sandbox allows) and runs it through the
// dynamic loader, which maps it instead of executing it: memfd-ldso LDSO
// PATH [ARG]...
func memfdLdso(a []string) {
	need(a, 2)
	data, err := os.ReadFile(a[1])
	if err != nil {
		fail("read "+a[1], err)
	}
	fd, err := unix.MemfdCreate("corral-probe", unix.MFD_NOEXEC_SEAL)
	if err != nil {
		fail("memfd_create(MFD_NOEXEC_SEAL)", err)
	}
	if _, err := unix.Write(fd, data); err != nil {
		fail("write memfd", err)
	}
	argv := append([]string{a[0], "/proc/self/fd/" + strconv.Itoa(fd)}, a[2:]...)
	fail("exec "+a[0], unix.Exec(a[0], argv, os.Environ()))
}

func nsFlag(name string) int {
	switch name {
	case "user":
		return unix.CLONE_NEWUSER
	case "mount":
		return unix.CLONE_NEWNS
	case "net":
		return unix.CLONE_NEWNET
	case "pid":
		return unix.CLONE_NEWPID
	case "ipc":
		return unix.CLONE_NEWIPC
	case "uts":
		return unix.CLONE_NEWUTS
	case "cgroup":
		return unix.CLONE_NEWCGROUP
	case "time":
		return unix.CLONE_NEWTIME
	}
	usage()
	return 0
}

func num(s string) int { return int(num64(s)) }

func num64(s string) uint64 {
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		usage()
	}
	return n
}
