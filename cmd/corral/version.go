package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"
// (scripts/release.sh does); other builds report what Go recorded.
var version = "dev"

var versionCommand = command{
	name:    "version",
	usage:   "",
	summary: "Print corral's version.",
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func([]string) error {
			fmt.Printf("corral %s %s/%s %s\n", versionString(), runtime.GOOS, runtime.GOARCH, runtime.Version())
			return nil
		}
	},
}

// versionString is corral's version, with a warning when the binary has
// the end-to-end tests' hooks.
func versionString() string {
	info, _ := debug.ReadBuildInfo()
	v := versionOf(version, info)
	if testHooksBuilt {
		v += " (test hooks: not for use)"
	}
	return v
}

// versionOf picks the version to report: the stamped one; else the
// module version go recorded, which `go install
// corral.dev/corral/cmd/corral@v1.2.3` sets to v1.2.3 (and go build, since
// Go 1.24, to a pseudo-version of the checkout's commit); else "dev" with
// the VCS revision when there is one.
func versionOf(stamped string, info *debug.BuildInfo) string {
	if stamped != "dev" || info == nil {
		return stamped
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return stamped + "+" + s.Value[:12]
		}
	}
	return stamped
}
