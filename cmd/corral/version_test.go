package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "711946b1c0ffee0123456789"}}
	for _, c := range []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		want    string
	}{
		{"release build: the stamp wins", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}}, "v1.2.3"},
		{"go install module@version", "dev", &debug.BuildInfo{Main: debug.Module{Path: "corral.dev/corral", Version: "v1.2.3"}}, "v1.2.3"},
		{"go build in a checkout (Go 1.24+)", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126041300-711946b1c0ff+dirty"}, Settings: rev}, "v0.0.0-20261126041300-711946b1c0ff+dirty"},
		{"go build without a module version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "dev+711946b1c0ff"},
		{"no VCS information", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build information", "dev", nil, "dev"},
	} {
		if got := versionOf(c.stamped, c.info); got != c.want {
			t.Errorf("%s: versionOf = %q, want %q", c.name, got, c.want)
		}
	}
}
