#!/usr/bin/env bash
# Runs a command with Go set up to build corral for another Linux
# architecture (arm64 on an x86_64 machine, or amd64 on an arm64 one):
#
#   bash scripts/cross.sh arm64 go build -o corral-arm64 ./cmd/corral
#   bash scripts/cross.sh arm64 go test ./sandbox/seccomp -libseccomp-api 3
#
# corral needs cgo and libseccomp, so, as root with apt like deps.sh, this
# installs Debian's cross gcc for the architecture, its libseccomp
# (libseccomp-dev:ARCH, with the static library; dpkg --add-architecture
# first) and qemu-user-static, and sets GOARCH, CC and PKG_CONFIG_LIBDIR.
# go test and go run run what they build under qemu-user (-exec in
# GOFLAGS), which has no namespaces, Landlock or seccomp(2): only what
# needs none of them means anything there (the seccomp package's tests
# compile programs and run them in a BPF interpreter; -libseccomp-api 3
# stands in for the kernel probe qemu-user cannot answer). On a machine of
# that architecture it runs the command as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh

arch=${1:-}
case $arch in
amd64) triple=x86_64-linux-gnu qemu=qemu-x86_64-static ;;
arm64) triple=aarch64-linux-gnu qemu=qemu-aarch64-static ;;
*)
	echo "usage: cross.sh amd64|arm64 COMMAND [ARG]..." >&2
	exit 2
	;;
esac
shift

if [ "$(go env GOHOSTARCH)" != "$arch" ]; then
	need=()
	command -v "$triple-gcc" >/dev/null || need+=("gcc-${triple//_/-}")
	[ -e "/usr/lib/$triple/libseccomp.a" ] || need+=("libseccomp-dev:$arch")
	command -v "$qemu" >/dev/null || need+=(qemu-user-static)
	if [ ${#need[@]} -gt 0 ]; then
		echo "cross: installing ${need[*]}" >&2
		if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
			dpkg --add-architecture "$arch"
		fi
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	fi
	export GOARCH=$arch CC=$triple-gcc
	export PKG_CONFIG_LIBDIR=/usr/lib/$triple/pkgconfig:/usr/share/pkgconfig
	export GOFLAGS="${GOFLAGS:+$GOFLAGS }-exec=$qemu"
fi
exec "$@"
