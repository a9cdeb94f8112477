//go:build corral_testhooks

package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"time"

	"corral.dev/corral"
)

// testHooks reads the end-to-end tests' windows and switches into spec.
// Only a binary built with -tags corral_testhooks has them (the tests
// build theirs so); `corral version` says so.
func testHooks(spec *corral.Spec) error {
	d := &spec.Debug
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
	if f := os.Getenv("CORRAL_TEST_LOOKUPS"); f != "" {
		spec.Resolver = lookupLog(f)
	}
	return nil
}

// lookupLog is the proxy's resolver for the names --resolve does not pin
// when CORRAL_TEST_LOOKUPS names a file: it appends each name there, one a
// line, and resolves nothing. The tests count the DNS queries a run
// would have sent by it, and no name of theirs reaches a real resolver.
type lookupLog string

func (l lookupLog) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f, err := os.OpenFile(string(l), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("CORRAL_TEST_LOOKUPS: %w", err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, host); err != nil {
		return nil, fmt.Errorf("CORRAL_TEST_LOOKUPS: %w", err)
	}
	return nil, fmt.Errorf("%s: no such host (CORRAL_TEST_LOOKUPS resolves nothing)", host)
}

const testHooksBuilt = true
