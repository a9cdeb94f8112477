package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"; a
// plain build reports the VCS revision Go recorded, if any.
var version = "dev"

var versionCommand = command{
	name:    "version",
	usage:   "",
	summary: "Print corral's version.",
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func([]string) error {
			v := version
			if info, ok := debug.ReadBuildInfo(); ok && v == "dev" {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						v += "+" + s.Value[:12]
					}
				}
			}
			if testHooksBuilt {
				v += " (test hooks: not for use)"
			}
			fmt.Printf("corral %s %s/%s %s\n", v, runtime.GOOS, runtime.GOARCH, runtime.Version())
			return nil
		}
	},
}
