package seccomp

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The tests below run the programs corral loads (compiled now by
// libseccomp, and the ones compiled into the binary for every
// architecture, read from their files) through a BPF interpreter, as the
// kernel would for each call: every rule must refuse what it names, with
// high garbage bits or without, and nothing else.

// target is an architecture a program is written for: the arch its
// seccomp_data carries, and its syscall numbers.
type target struct {
	name  string
	audit uint32
	arch  libseccomp.ScmpArch
}

var targets = map[string]target{
	"amd64": {"amd64", unix.AUDIT_ARCH_X86_64, libseccomp.ArchAMD64},
	"arm64": {"arm64", unix.AUDIT_ARCH_AARCH64, libseccomp.ArchARM64},
}

// verdict is what a program answered: SECCOMP_RET_* with its data.
type verdict uint32

func (v verdict) String() string {
	switch uint32(v) & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "allow"
	case unix.SECCOMP_RET_ERRNO:
		return Errno(uint32(v) & unix.SECCOMP_RET_DATA).String()
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "kill process"
	}
	return fmt.Sprintf("%#x", uint32(v))
}

const allow = verdict(unix.SECCOMP_RET_ALLOW)

func refuse(e Errno) verdict { return verdict(unix.SECCOMP_RET_ERRNO | uint32(e)) }

// program is a compiled filter ready to run calls through.
type program struct {
	name string
	vm   *bpf.VM
	target
}

func load(t *testing.T, name string, arch target, prog []byte) program {
	t.Helper()
	if len(prog)%8 != 0 {
		t.Fatalf("%s: %d bytes is not a whole number of instructions", name, len(prog))
	}
	raw := make([]bpf.RawInstruction, len(prog)/8)
	for i := range raw {
		b := prog[i*8:]
		// struct sock_filter in the machine's byte order.
		raw[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("%s: an instruction the interpreter does not know", name)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return program{name, vm, arch}
}

// run answers one call. seccomp_data is {int nr; u32 arch; u64 ip;
// u64 args[6]} in the machine's byte order (little-endian for both
// targets), read by 32-bit loads; the interpreter loads big-endian, so
// each 32-bit word is stored so.
func (p program) run(t *testing.T, arch uint32, nr int, args [6]uint64) verdict {
	t.Helper()
	in := make([]byte, 64)
	word := func(off int, v uint32) { binary.BigEndian.PutUint32(in[off:], v) }
	half := func(off int, v uint64) {
		lo, hi := off, off+4
		if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian machine
			lo, hi = hi, lo
		}
		word(lo, uint32(v))
		word(hi, uint32(v>>32))
	}
	word(0, uint32(nr))
	word(4, arch)
	half(8, 0x401000)
	for i, a := range args {
		half(16+8*i, a)
	}
	v, err := p.vm.Run(in)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	return verdict(v)
}

// sysno is a syscall's number on the target, or -1 where it has none
// (arm64 has no iopl, ioperm or uselib: no call can name them).
func (a target) sysno(t *testing.T, name string) int {
	t.Helper()
	nr, err := libseccomp.GetSyscallFromNameByArch(name, a.arch)
	if err != nil {
		n, ok := newSyscalls[name]
		if !ok {
			t.Fatalf("%s on %s: %v", name, a.name, err)
		}
		return n
	}
	if nr < 0 {
		return -1 // libseccomp's number for a call the architecture lacks
	}
	return int(nr)
}

// want is what the table means for one call: the errno of any rule for
// the syscall whose condition holds, else allowed.
func want(rules []Rule, name string, args [6]uint64) verdict {
	for _, r := range rules {
		if r.Syscall != name {
			continue
		}
		if r.Holds(args) {
			return refuse(r.Errno)
		}
	}
	return allow
}

// programs are every program corral may load: both tables compiled now
// (where the interpreter knows this machine's seccomp_data), and each
// architecture's compiled-in pair, read from its files.
func programs(t *testing.T) map[bool][]program {
	t.Helper()
	out := map[bool][]program{}
	for _, restricted := range []bool{false, true} {
		if host, ok := targets[runtime.GOARCH]; ok {
			prog, err := compileBPF(Rules(restricted))
			if err != nil {
				t.Fatal(err)
			}
			out[restricted] = append(out[restricted], load(t, fmt.Sprintf("compiled (restricted=%v)", restricted), host, prog))
		}
		for _, arch := range builtArchs {
			for file, r := range builtFiles(arch) {
				if r != restricted {
					continue
				}
				prog, err := os.ReadFile(file + ".bpf")
				if err != nil {
					t.Fatal(err)
				}
				out[restricted] = append(out[restricted], load(t, file+".bpf", targets[arch], prog))
			}
		}
	}
	return out
}

// TestBPFRefusesWhatTheTableSays runs, for every rule, the values it
// names, the same with bits set outside its mask (which the kernel does
// not read, so they must not dodge it), every single-bit neighbour inside
// the mask, and random arguments, and compares each answer with the
// table's meaning.
func TestBPFRefusesWhatTheTableSays(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for restricted, progs := range programs(t) {
		rules := Rules(restricted)
		for _, p := range progs {
			calls := 0
			check := func(name string, args [6]uint64) {
				nr := p.sysno(t, name)
				if nr < 0 {
					return
				}
				calls++
				if got, w := p.run(t, p.audit, nr, args), want(rules, name, args); got != w {
					t.Errorf("%s: %s%v = %s, the table says %s", p.name, name, args, got, w)
				}
			}
			for _, r := range rules {
				check(r.Syscall, [6]uint64{})
				if r.Arg == nil {
					continue
				}
				var args [6]uint64
				hit := r.Arg.Value
				if r.Arg.Op == AnyBit {
					hit = r.Arg.Mask & -r.Arg.Mask // the lowest bit
				}
				if w := r.When; w != nil {
					// The second condition holds, so the first decides;
					// then without it, which nothing refuses.
					args[w.Index] = w.Value
					if w.Op == AnyBit {
						args[w.Index] = w.Mask & -w.Mask
					}
					args[r.Arg.Index] = hit
					check(r.Syscall, args)
					args[w.Index] = ^w.Mask & 0xdead_beef_dead_beef
					check(r.Syscall, args)
					args[w.Index] = w.Mask & -w.Mask
				}
				args[r.Arg.Index] = hit
				check(r.Syscall, args)
				args[r.Arg.Index] = hit | ^r.Arg.Mask&0xdead_beef_dead_beef
				check(r.Syscall, args)
				for bit := uint64(1); bit != 0; bit <<= 1 {
					if r.Arg.Mask&bit != 0 {
						args[r.Arg.Index] = hit ^ bit
						check(r.Syscall, args)
					}
				}
				for range 64 {
					for i := range args {
						args[i] = rng.Uint64()
					}
					check(r.Syscall, args)
				}
			}
			for _, name := range []string{"read", "write", "openat", "execve", "connect", "getpid"} {
				check(name, [6]uint64{3, 0x7fff0000, 4096})
			}
			if calls < 4*len(rules) {
				t.Errorf("%s: only %d calls for %d rules", p.name, calls, len(rules))
			}
		}
	}
}

// TestBPFAttacks: the calls the end-to-end suite makes, answered by the
// programs themselves, so a table and a reference that were wrong the
// same way would still be caught.
func TestBPFAttacks(t *testing.T) {
	eperm, enosys, eopnotsupp := refuse(EPERM), refuse(ENOSYS), refuse(EOPNOTSUPP)
	for restricted, progs := range programs(t) {
		memfd := allow
		if restricted {
			memfd = eperm
		}
		cases := []struct {
			name string
			args [6]uint64
			want verdict
		}{
			{"socket", [6]uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, allow},
			{"socket", [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}, allow},
			{"socket", [6]uint64{unix.AF_PACKET, unix.SOCK_RAW}, eperm},
			{"socket", [6]uint64{unix.AF_PACKET | 1<<32, unix.SOCK_DGRAM}, eperm},
			{"socket", [6]uint64{unix.AF_INET, unix.SOCK_RAW | unix.SOCK_NONBLOCK, unix.IPPROTO_ICMP}, eperm},
			{"socket", [6]uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, eperm},
			{"socket", [6]uint64{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP | 0xffff_ffff_0000_0000}, eperm},
			{"socket", [6]uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, eperm},
			{"clone", [6]uint64{uint64(unix.SIGCHLD)}, allow},
			{"clone", [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
			{"clone", [6]uint64{unix.CLONE_NEWNS | unix.CLONE_VM}, eperm},
			{"unshare", [6]uint64{unix.CLONE_NEWNET}, eperm},
			{"unshare", [6]uint64{unix.CLONE_FILES}, allow},
			{"clone3", [6]uint64{0x7fff0000, 88}, enosys},
			{"ioctl", [6]uint64{0, unix.TIOCSTI}, eperm},
			{"ioctl", [6]uint64{0, unix.TIOCSTI | 1<<32}, eperm},
			{"ioctl", [6]uint64{0, unix.TCGETS}, allow},
			{"ioctl", [6]uint64{0, unix.TIOCGWINSZ}, allow},
			{"memfd_create", [6]uint64{0x7fff0000, unix.MFD_CLOEXEC}, memfd},
			{"memfd_create", [6]uint64{0x7fff0000, unix.MFD_EXEC | unix.MFD_CLOEXEC}, eperm},
			{"ptrace", [6]uint64{unix.PTRACE_ATTACH, 1}, eperm},
			{"io_uring_setup", [6]uint64{8}, eperm},
			{"bpf", nil6(), eperm},
			{"setns", [6]uint64{3, 0}, eperm},
			{"open_tree_attr", nil6(), eperm},
			{"execve", nil6(), allow},
			// Set-id bits, through every call that sets a mode.
			{"chmod", [6]uint64{0x7fff0000, 0o4755}, eperm},
			{"chmod", [6]uint64{0x7fff0000, 0o6755 | 1<<32}, eperm},
			{"chmod", [6]uint64{0x7fff0000, 0o755}, allow},
			{"chmod", [6]uint64{0x7fff0000, 0o1777}, allow},
			{"fchmod", [6]uint64{3, 0o2755}, eperm},
			{"fchmod", [6]uint64{3, 0o644}, allow},
			{"fchmodat", [6]uint64{unix.AT_FDCWD & 0xffffffff, 0x7fff0000, 0o4711}, eperm},
			{"fchmodat", [6]uint64{unix.AT_FDCWD & 0xffffffff, 0x7fff0000, 0o700}, allow},
			{"fchmodat2", [6]uint64{3, 0x7fff0000, 0o2700, unix.AT_SYMLINK_NOFOLLOW}, eperm},
			{"open", [6]uint64{0x7fff0000, unix.O_CREAT | unix.O_WRONLY, 0o4755}, eperm},
			{"open", [6]uint64{0x7fff0000, unix.O_RDONLY, 0o4755}, allow},
			{"open", [6]uint64{0x7fff0000, unix.O_CREAT | unix.O_WRONLY, 0o755}, allow},
			{"openat", [6]uint64{3, 0x7fff0000, unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, 0o6755}, eperm},
			{"openat", [6]uint64{3, 0x7fff0000, unix.O_TMPFILE | unix.O_RDWR, 0o2755}, eperm},
			{"openat", [6]uint64{3, 0x7fff0000, unix.O_RDWR, 0o2755}, allow},
			{"openat", [6]uint64{3, 0x7fff0000, unix.O_CREAT | unix.O_WRONLY, 0o666}, allow},
			{"creat", [6]uint64{0x7fff0000, 0o4755}, eperm},
			{"creat", [6]uint64{0x7fff0000, 0o755}, allow},
			{"mknod", [6]uint64{0x7fff0000, unix.S_IFREG | 0o4755}, eperm},
			{"mknodat", [6]uint64{3, 0x7fff0000, unix.S_IFREG | 0o2755}, eperm},
			{"mknodat", [6]uint64{3, 0x7fff0000, unix.S_IFIFO | 0o644}, allow},
			{"mkdirat", [6]uint64{3, 0x7fff0000, 0o6777}, allow},
			{"openat2", [6]uint64{3, 0x7fff0000, 0x7fff1000, 24}, enosys},
			// Extended attributes: ACLs and file capabilities.
			{"setxattr", [6]uint64{0x7fff0000, 0x7fff1000}, eopnotsupp},
			{"fsetxattr", [6]uint64{3, 0x7fff1000}, eopnotsupp},
			{"lremovexattr", [6]uint64{0x7fff0000, 0x7fff1000}, eopnotsupp},
			{"setxattrat", nil6(), eopnotsupp},
			{"getxattr", [6]uint64{0x7fff0000, 0x7fff1000}, allow},
		}
		for _, p := range progs {
			for _, c := range cases {
				nr := p.sysno(t, c.name)
				if nr < 0 {
					continue // arm64 has only the *at forms of chmod, open, creat and mknod
				}
				if got := p.run(t, p.audit, nr, c.args); got != c.want {
					t.Errorf("%s: %s%v = %s, want %s", p.name, c.name, c.args, got, c.want)
				}
			}
			// A call made through another architecture's numbering would
			// pass a table written for this one: the process dies.
			if got := p.run(t, unix.AUDIT_ARCH_I386, 26 /* ptrace on i386 */, nil6()); got != verdict(unix.SECCOMP_RET_KILL_PROCESS) {
				t.Errorf("%s: a call from the i386 ABI = %s, want kill process", p.name, got)
			}
			if p.target.name == "amd64" {
				// x32 shares x86_64's audit arch and numbers its calls
				// from bit 30: ptrace that way must not be allowed.
				if got := p.run(t, p.audit, 0x40000000|521 /* x32 ptrace */, nil6()); got == allow {
					t.Errorf("%s: ptrace through the x32 ABI is allowed", p.name)
				}
			}
		}
	}
}

func nil6() [6]uint64 { return [6]uint64{} }
