package corral

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"corral.dev/corral/sandbox"
)

// TestEndedGivenUp: a run given up before its plan (a signal to corral,
// the caller's context) has no error from sandbox.Execute, but its
// Result still says why the command never ran.
func TestEndedGivenUp(t *testing.T) {
	for _, c := range []struct {
		res  sandbox.Result
		code int
		why  string
	}{
		{sandbox.Result{Signal: int(unix.SIGTERM), ExitCode: 128 + int(unix.SIGTERM)}, 143, "SIGTERM"},
		{sandbox.Result{TimedOut: true}, ExitTimeout, "context"},
	} {
		r := &Result{Stage: StagePlan}
		if err := ended(r, &c.res, nil, "x"); err != nil {
			t.Fatal(err)
		}
		if r.ExitCode != c.code || !strings.Contains(r.Error, c.why) {
			t.Errorf("%+v: exit %d, error %q; want %d and %q", c.res, r.ExitCode, r.Error, c.code, c.why)
		}
	}
	r := &Result{Stage: StageCommand}
	ended(r, &sandbox.Result{Started: true, Signal: 9, ExitCode: 137}, nil, "x")
	if r.Error != "" {
		t.Errorf("a command a signal ended has an error: %q", r.Error)
	}
}
