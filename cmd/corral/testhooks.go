//go:build corral_testhooks

package main

import (
	"fmt"
	"os"
	"time"

	"corral.dev/corral"
)

// testHooks reads the end-to-end tests' windows and switches into d. Only
// a binary built with -tags corral_testhooks has them (the tests build
// theirs so); `corral version` says so.
func testHooks(d *corral.Debug) error {
	d.LegacyMounts = os.Getenv("CORRAL_MOUNTS") == "legacy"
	for name, to := range map[string]*time.Duration{"CORRAL_MOUNT_PAUSE": &d.MountPause, "CORRAL_PROBE_PAUSE": &d.ProbePause, "CORRAL_HOLD_PAUSE": &d.HoldPause, "CORRAL_CLEANUP_PAUSE": &d.CleanupPause} {
		if v := os.Getenv(name); v != "" {
			p, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*to = p
		}
	}
	return nil
}

const testHooksBuilt = true
