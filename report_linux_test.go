//go:build linux

package corral_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
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

// TestRunKeepsWarnings: a warning Run gives Spec.Warn (the landlock
// tier's notice) is in the Result's warnings too, once.
func TestRunKeepsWarnings(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	skills, err := corral.LoadSkills(nil, corral.Dirs{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	res, err := corral.Run(context.Background(), corral.Spec{Skills: skills, Argv: []string{"true"}, Tier: sandbox.TierLandlock, Warn: func(s string) { warned = append(warned, s) }})
	if err != nil || res.ExitCode != 0 {
		t.Skipf("no landlock tier here: %v", err)
	}
	n := 0
	for _, w := range res.Warnings {
		if strings.Contains(w, "landlock tier") {
			n++
		}
	}
	if n != 1 || !slices.ContainsFunc(warned, func(w string) bool { return strings.Contains(w, "landlock tier") }) {
		t.Errorf("warned %q; the Result has %q, want the tier's notice once", warned, res.Warnings)
	}
}
