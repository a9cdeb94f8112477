package corral

import (
	"os"
	"testing"
)

// BenchmarkTerminals is what saving and restoring the terminal adds to a
// run whose stdio is (here, when run under a terminal) or is not a tty.
func BenchmarkTerminals(b *testing.B) {
	for range b.N {
		restoreTerminals(saveTerminals(os.Stdin, os.Stdout, os.Stderr))
	}
}
