package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// TryUserNS makes a user namespace for real (a child that maps the
// caller's ids and runs `corral version` there) and returns why it could
// not. The sysctls Probe reads miss what a container's seccomp profile or
// an LSM refuses; doctor asks the kernel. The init has the last word on
// every run anyway (a refusal there chooses the landlock tier).
func TryUserNS() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "version")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v %s", err, out)
	}
	return nil
}
