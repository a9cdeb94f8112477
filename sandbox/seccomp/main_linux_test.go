package seccomp

import (
	"flag"
	"fmt"
	"os"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

var libseccompAPI = flag.Uint("libseccomp-api", 0, "set libseccomp's API level before compiling (3 under qemu-user, which has no seccomp(2) for libseccomp to probe)")

// TestMain sets libseccomp's API level when asked. Under a user-mode
// emulator (qemu-aarch64-static running the arm64 tests) seccomp(2) is
// missing, libseccomp's probe says level 1 and refuses the kill-process
// action the table's programs end with. The program libseccomp writes
// does not depend on the level (levels 3 to 6 give the same bytes), and
// nothing here loads one into a kernel.
func TestMain(m *testing.M) {
	flag.Parse()
	if *libseccompAPI > 0 {
		if err := libseccomp.SetAPI(*libseccompAPI); err != nil {
			fmt.Fprintf(os.Stderr, "-libseccomp-api %d: %v\n", *libseccompAPI, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
