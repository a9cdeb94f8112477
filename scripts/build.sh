#!/usr/bin/env bash
# Builds bin/corral (or the path given). A static binary starts about
# 0.8 ms faster than a dynamically linked one, and corral starts twice per
# call (the launcher and the sandbox's init), so link statically when the
# toolchain can.
#
# Go 1.26's default garbage collector ("green tea") touches a page per new
# span when the heap is set up; corral's short runs never collect, and
# without it a launch takes about 150 fewer page faults and 6% less wall
# time here (docs/benchmarks.md). A Go that no longer knows the
# experiment builds with its default.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
out=${1:-bin/corral}
# Experiments set with `go env -w` are kept, and so is an explicit choice
# of the collector either way.
base=$(go env GOEXPERIMENT 2>/dev/null || true)
case ",$base," in
*,greenteagc,* | *,nogreenteagc,*) ;;
*)
	exp=${base:+$base,}nogreenteagc
	if GOEXPERIMENT=$exp go env GOEXPERIMENT >/dev/null 2>&1; then
		export GOEXPERIMENT=$exp
	fi
	;;
esac
# CORRAL_VERSION (scripts/release.sh sets it) stamps the version in and
# makes a release build: no build paths in the binary (-trimpath), Go's own
# user and DNS lookups (osusergo, netgo: a static glibc binary that looks
# them up loads the host's NSS modules, which need the glibc it was linked
# with, and a release runs on hosts other than the one that built it), and
# a failed static link is an error, not a dynamic fallback.
if [ -n "${CORRAL_VERSION:-}" ]; then
	go build -trimpath -tags osusergo,netgo \
		-ldflags "-s -w -X main.version=$CORRAL_VERSION -linkmode external -extldflags -static" \
		-o "$out" ./cmd/corral
	exit
fi
if ! go build -ldflags '-s -w -linkmode external -extldflags "-static"' -o "$out" ./cmd/corral 2>/dev/null; then
	echo "build: static linking failed; building a dynamically linked corral" >&2
	go build -o "$out" ./cmd/corral
fi
