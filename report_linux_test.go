//go:build linux

package corral_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"corral.dev/corral"
	"corral.dev/corral/sandbox"
)

// TestRunResultStages runs commands that end at each stage Run reaches
// on its own with a sandbox: the command (its status, the timeout) and
// the plan (a program that is not there). Each Result conforms.
func TestRunResultStages(t *testing.T) {
	s := reportSchema(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	skills, err := corral.LoadSkills(nil, corral.Dirs{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := corral.Run(context.Background(), corral.Spec{Skills: skills, Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Skipf("cannot run a sandbox here: %v", err)
	}
	for _, c := range []struct {
		argv    []string
		limits  sandbox.LimitFlags
		stage   corral.Stage
		code    int
		errText bool
	}{
		{[]string{"sh", "-c", "exit 3"}, sandbox.LimitFlags{}, corral.StageCommand, 3, false},
		{[]string{"sleep", "30"}, sandbox.LimitFlags{Timeout: 300 * time.Millisecond, KillGrace: 100 * time.Millisecond}, corral.StageCommand, corral.ExitTimeout, false},
		{[]string{"no-such-program-corral"}, sandbox.LimitFlags{}, corral.StagePlan, corral.ExitNotFound, true},
	} {
		res, err := corral.Run(context.Background(), corral.Spec{Skills: skills, Argv: c.argv, Limits: c.limits})
		if res.Stage != c.stage || res.ExitCode != c.code || (res.Error != "") != c.errText || (err != nil) != c.errText {
			t.Errorf("%q: stage %q exit %d error %q (%v), want stage %q exit %d", c.argv, res.Stage, res.ExitCode, res.Error, err, c.stage, c.code)
		}
		data, _ := json.Marshal(res)
		validReport(t, s, data)
	}
}
