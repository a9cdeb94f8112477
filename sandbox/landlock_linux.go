package sandbox

import (
	"errors"
	"fmt"
	"os"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// applyLandlock restricts the calling thread (and so the command forked
// from it) to the plan's rules. It is single-threaded on purpose: the
// all-threads variant costs about a millisecond, and only this thread
// starts the command.
func applyLandlock(l *Landlock) error {
	if l.ABI < 1 {
		return nil // best effort was asked for; the plan says it is missing
	}
	attr := llsys.RulesetAttr{HandledAccessFS: l.HandledFS, HandledAccessNet: l.HandledNet, Scoped: l.Scoped}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return &os.SyscallError{Syscall: "landlock_create_ruleset", Err: err}
	}
	defer unix.Close(fd)
	for _, r := range l.Rules {
		if err := addPathRule(fd, r); err != nil {
			return err
		}
	}
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return &os.SyscallError{Syscall: "landlock_restrict_self", Err: err}
	}
	return nil
}

func addPathRule(ruleset int, r PathRule) error {
	pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // gone since the plan was made: granting nothing is narrower
	}
	if err != nil {
		return fmt.Errorf("opening %s for a rule: %w", r.Path, err)
	}
	defer unix.Close(pfd)
	access := r.Access
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	attr := llsys.PathBeneathAttr{AllowedAccess: access, ParentFd: pfd}
	if err := llsys.LandlockAddPathBeneathRule(ruleset, &attr, 0); err != nil {
		return fmt.Errorf("landlock rule for %s (%s): %w", r.Path, r.Rights, err)
	}
	return nil
}
