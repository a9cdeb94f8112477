package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// stagingDir is where the new root is assembled before pivot_root. It is
// the host's /tmp, covered by a tmpfs inside the sandbox's own mount
// namespace, so the host never sees it.
const stagingDir = "/tmp"

// setupMounts builds a new root that holds only the plan's mounts and
// pivots into it. Bind sources are opened before anything is mounted, so
// mounting the staging tmpfs over /tmp cannot hide a work dir under /tmp.
func setupMounts(plan *Plan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return &os.SyscallError{Syscall: "mount(/, MS_PRIVATE)", Err: err}
	}
	sources := make([]int, len(plan.Mounts))
	for i, m := range plan.Mounts {
		sources[i] = -1
		if m.Kind != MountBind && m.Kind != MountDev {
			continue
		}
		fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // vanished since the plan: granting nothing is narrower
		}
		if err != nil {
			return fmt.Errorf("opening %s: %w", m.Source, err)
		}
		sources[i] = fd
	}
	defer func() {
		for _, fd := range sources {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	root := stagingDir
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return &os.SyscallError{Syscall: "mount(tmpfs new root)", Err: err}
	}
	for i, m := range plan.Mounts {
		if err := mountOne(root, m, sources[i]); err != nil {
			return fmt.Errorf("%s %s: %w", m.Kind, m.Target, err)
		}
	}
	if err := setFlags(root, plan.Mounts); err != nil {
		return err
	}
	return pivot(root)
}

// setFlags makes the whole new root read-only, nosuid and nodev with one
// recursive mount_setattr, then handles the exceptions one mount at a
// time, in plan order (parents before children):
//
//   - noexec is set recursively, so nothing under a noexec grant escapes it;
//   - read-only is lifted (and nodev, for device nodes) on the mount itself
//     only, never recursively, so a read-only bind inside a writable one
//     (a protected path, a read grant under the work dir) stays read-only;
//   - an executable bind (an allowed program) clears noexec on itself.
//
// One call per exception is far cheaper than a remount per bind.
func setFlags(root string, mounts []Mount) error {
	all := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	err := unix.MountSetattr(unix.AT_FDCWD, root, unix.AT_RECURSIVE, all)
	if errors.Is(err, unix.ENOSYS) {
		return remountAll(root, mounts) // Linux < 5.12
	}
	if err != nil {
		return &os.SyscallError{Syscall: "mount_setattr(new root)", Err: err}
	}
	for _, m := range mounts {
		target := filepath.Join(root, m.Target)
		if m.NoExec {
			if err := setattr(target, unix.AT_RECURSIVE, unix.MOUNT_ATTR_NOEXEC, 0); err != nil {
				return err
			}
		}
		var clr uint64
		switch m.Kind {
		case MountTmpfs:
			if m.Target != "/dev" {
				clr = unix.MOUNT_ATTR_RDONLY
			}
		case MountProc:
			clr = unix.MOUNT_ATTR_RDONLY
		case MountDev:
			clr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NODEV
		case MountBind:
			if !m.ReadOnly {
				clr = unix.MOUNT_ATTR_RDONLY
			}
			if !m.NoExec {
				clr |= unix.MOUNT_ATTR_NOEXEC
			}
		}
		if clr == 0 {
			continue
		}
		err := setattr(target, 0, 0, clr)
		if errors.Is(err, unix.EPERM) {
			// The host locked the flag on this mount (read-only or
			// noexec there too): it stays, which is narrower.
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func setattr(target string, flags uint, set, clr uint64) error {
	attr := &unix.MountAttr{Attr_set: set, Attr_clr: clr}
	if err := unix.MountSetattr(unix.AT_FDCWD, target, flags|unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
		return &os.SyscallError{Syscall: "mount_setattr(" + target + ")", Err: err}
	}
	return nil
}

// remountAll is setFlags for kernels without mount_setattr.
func remountAll(root string, mounts []Mount) error {
	for _, m := range mounts {
		if m.Kind == MountBind || m.Kind == MountDev {
			if err := remount(filepath.Join(root, m.Target), m); err != nil {
				return fmt.Errorf("remounting %s: %w", m.Target, err)
			}
		}
	}
	if err := unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return &os.SyscallError{Syscall: "mount(new root read-only)", Err: err}
	}
	return nil
}

func mountOne(root string, m Mount, src int) error {
	target := filepath.Join(root, m.Target)
	switch m.Kind {
	case MountTmpfs:
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
		if m.NoExec {
			flags |= unix.MS_NOEXEC
		}
		mode := "mode=1777"
		if m.Target == "/dev" {
			mode = "mode=0755"
		}
		return mount("tmpfs", target, "tmpfs", flags, mode)
	case MountProc:
		if err := os.MkdirAll(target, 0o555); err != nil {
			return err
		}
		return mount("proc", target, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	case MountDir:
		return os.MkdirAll(target, 0o755)
	case MountSymlnk:
		if _, err := os.Lstat(target); err == nil {
			return nil // a bound folder already holds it
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.Symlink(m.Source, target)
	case MountBind, MountDev:
		if src < 0 {
			return nil
		}
		if err := mountPoint(target, m.Dir); err != nil {
			return err
		}
		return mount("/proc/self/fd/"+strconv.Itoa(src), target, "", unix.MS_BIND|unix.MS_REC, "")
	}
	return fmt.Errorf("unknown mount kind %q", m.Kind)
}

// remount applies the bind's flags, keeping the flags the source mount
// already had (a user namespace may not clear locked ones).
func remount(target string, m Mount) error {
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return &os.SyscallError{Syscall: "statfs", Err: err}
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_NOSUID)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if m.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	if m.NoExec {
		flags |= unix.MS_NOEXEC
	}
	if m.Kind != MountDev {
		flags |= unix.MS_NODEV
	}
	return mount("", target, "", flags, "")
}

// mountPoint creates an empty folder or file to mount on.
func mountPoint(target string, dir bool) error {
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	if dir {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func mount(source, target, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		return &os.SyscallError{Syscall: "mount", Err: err}
	}
	return nil
}

// pivot makes root the root of the mount namespace and detaches the old
// one, so no path leads back to the host's tree.
func pivot(root string) error {
	if err := unix.Chdir(root); err != nil {
		return &os.SyscallError{Syscall: "chdir(new root)", Err: err}
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return &os.SyscallError{Syscall: "pivot_root", Err: err}
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return &os.SyscallError{Syscall: "umount(old root)", Err: err}
	}
	if err := unix.Chdir("/"); err != nil {
		return &os.SyscallError{Syscall: "chdir(/)", Err: err}
	}
	return nil
}
