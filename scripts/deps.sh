#!/usr/bin/env bash
# Installs what corral needs to build and test on Debian, as root: gcc and
# libseccomp-dev (cgo), util-linux (setpriv), and a Go toolchain new enough
# for go.mod. Sourced by demo.sh and test.sh; prints nothing when all is there.
set -euo pipefail

need_pkgs=()
command -v gcc >/dev/null || need_pkgs+=(gcc libc6-dev)
[ -e /usr/include/seccomp.h ] || need_pkgs+=(libseccomp-dev)
command -v pkg-config >/dev/null || need_pkgs+=(pkg-config)
command -v setpriv >/dev/null || need_pkgs+=(util-linux)
command -v script >/dev/null || need_pkgs+=(bsdutils)
command -v git >/dev/null || need_pkgs+=(git)
[ -x /usr/bin/curl ] || need_pkgs+=(curl)     # the demo and the network tests run it in the sandbox
[ -x /usr/bin/python3 ] || need_pkgs+=(python3)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	echo "deps: installing ${need_pkgs[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"
want=$(awk '/^go /{print $2}' "$(dirname "${BASH_SOURCE[0]}")/../go.mod")
have_go() {
	command -v go >/dev/null || return 1
	local v; v=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
	# Go 1.21 and later fetch the go.mod toolchain themselves (GOTOOLCHAIN=auto).
	[ "$(printf '%s\n1.21\n' "${v%%[a-z]*}" | sort -V | head -1)" = "1.21" ]
}
if ! have_go; then
	# Debian 12 ships Go 1.19, too old to switch toolchains by itself: use it
	# once to fetch the toolchain module go.mod names from the Go module proxy.
	echo "deps: installing Go $want" >&2
	command -v go >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; }
	mod="golang.org/toolchain@v0.0.1-go${want}.linux-$(dpkg --print-architecture)"
	dir=$(cd /tmp && GO111MODULE=on GOFLAGS=-mod=mod go mod download -json "$mod" | awk -F'"' '/"Dir"/{print $4}')
	chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/* 2>/dev/null || true
	export PATH="$dir/bin:$PATH"
fi
export GOTOOLCHAIN=auto
export CGO_ENABLED=1
