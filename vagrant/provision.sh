#!/usr/bin/env bash
# Runs as root inside each matrix VM: installs what corral needs to build
# and test (gcc, libseccomp headers and static library, pkg-config,
# util-linux's setpriv and unshare, script, git, curl, python3, rsync) with
# the distribution's own package manager, and a Go toolchain. A Go older
# than 1.21 (Ubuntu 22.04 ships 1.18) fetches the one go.mod names itself
# (scripts/deps.sh does that), so any distribution Go will do.
set -euo pipefail

if command -v apt-get >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq gcc libc6-dev libseccomp-dev pkg-config util-linux bsdutils \
		git curl python3 rsync golang-go >/dev/null
elif command -v dnf >/dev/null; then
	dnf install -y -q gcc glibc-devel glibc-static libseccomp-devel libseccomp-static pkgconf-pkg-config \
		util-linux util-linux-script git curl python3 rsync golang >/dev/null ||
		# libseccomp-static is not in every Fedora release: the build
		# then links dynamically.
		dnf install -y -q gcc glibc-devel libseccomp-devel pkgconf-pkg-config \
			util-linux util-linux-script git curl python3 rsync golang >/dev/null
else
	echo "provision: no apt-get or dnf on this box" >&2
	exit 1
fi
# scripts/deps.sh (sourced by the build) finds everything in place now and
# only switches Go to the toolchain go.mod names.
go version
