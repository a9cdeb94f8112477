package usernotif

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The structs of <linux/seccomp.h>, field for field. x/sys has the ioctl
// numbers but not these; the tests check the sizes against the running
// kernel's SECCOMP_GET_NOTIF_SIZES.

// seccompData is struct seccomp_data (64 bytes).
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// notif is struct seccomp_notif (80 bytes).
type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// notifResp is struct seccomp_notif_resp (24 bytes).
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// notifAddfd is struct seccomp_notif_addfd (24 bytes).
type notifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// ioctl is the raw ioctl(2); arg is converted in the call itself so the
// pointee stays alive and in place for the whole syscall.
func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// ioctlRetry retries on EINTR. That is safe for SEND, ID_VALID and
// ADDFD: the kernel has either done the work (and returns its result) or
// undone it when it reports EINTR.
func ioctlRetry(fd int, req uint, arg unsafe.Pointer) error {
	for {
		err := ioctl(fd, req, arg)
		if err != unix.EINTR {
			return err
		}
	}
}

// recvNotif receives one notification into n, which it zeroes first: the
// kernel refuses (EINVAL) a struct that is not all zero.
func recvNotif(fd int, n *notif) error {
	*n = notif{}
	return ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
}

// idValid tells whether notification id is still pending, that is the
// target thread is still in the syscall and its pid has not been reused.
func idValid(fd int, id uint64) bool {
	return ioctlRetry(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// respond answers notification id: errno 0 makes the syscall return 0.
// It never sets SECCOMP_USER_NOTIF_FLAG_CONTINUE.
func respond(fd int, id uint64, errno unix.Errno) error {
	r := notifResp{ID: id, Error: -int32(errno)}
	return ioctlRetry(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// addFD installs srcfd in the target as newfd, closing whatever newfd
// was there (like dup2), with O_CLOEXEC if cloexec.
func addFD(fd int, id uint64, srcfd, newfd int, cloexec bool) error {
	a := notifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SETFD, Srcfd: uint32(srcfd), Newfd: uint32(newfd)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	return ioctlRetry(fd, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&a))
}

// checkListener tells a seccomp listener from any other fd: ID_VALID on
// an id that is not pending fails with ENOENT only on a listener.
func checkListener(fd int) error {
	var id uint64
	err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id))
	if err == nil || err == unix.ENOENT {
		return nil
	}
	return err
}

// nativeArch is the AUDIT_ARCH of this build: a notification from another
// ABI (e.g. i386 on x86_64) numbers its syscalls differently, so it is
// refused rather than decoded.
func nativeArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	case "386":
		return unix.AUDIT_ARCH_I386, true
	case "arm":
		return unix.AUDIT_ARCH_ARM, true
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64, true
	case "ppc64le":
		return unix.AUDIT_ARCH_PPC64LE, true
	case "ppc64":
		return unix.AUDIT_ARCH_PPC64, true
	case "s390x":
		return unix.AUDIT_ARCH_S390X, true
	case "loong64":
		return unix.AUDIT_ARCH_LOONGARCH64, true
	}
	return 0, false
}

// continueSyscall lets the target's own syscall go ahead. The supervisor
// does so only for a syscall that may make a name when the target cannot
// make any name itself (Landlock took every make right away, see
// CreatePolicy): what the target's memory says by the time the kernel
// reads it again can then make nothing.
func continueSyscall(fd int, id uint64) error {
	r := notifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	return ioctlRetry(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// addFDSend installs srcfd in the target as its lowest free fd and makes
// the syscall return that number, in one step (Linux 5.14).
func addFDSend(fd int, id uint64, srcfd int, cloexec bool) error {
	a := notifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(srcfd)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	return ioctlRetry(fd, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&a))
}
