#!/usr/bin/env bash
# Builds a release of corral, as root on Debian:
#
#   bash scripts/release.sh v0.3.0 [OUTDIR]      (OUTDIR defaults to dist/v0.3.0)
#
# OUTDIR then holds corral-linux-amd64 and corral-linux-arm64 (static,
# with the version stamped in), corral.1 and completions/corral.bash,
# completions/_corral (zsh) and completions/corral.fish (made by
# `corral docs` from the command table), and SHA256SUMS over all of them.
#
# The arm64 binary is cross-compiled (scripts/cross.sh installs what that
# needs) with arm64's seccomp programs compiled in. Before building, the
# seccomp tests run for both architectures (arm64's under qemu-user),
# which fails if either pair is not what libseccomp makes of the current
# table; after, each binary must hold its pair, say it is statically
# linked for its architecture, print the version, and answer `explain` and
# `check` (the foreign one under qemu-user, which has no namespaces,
# Landlock or seccomp: exec cannot run there).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "usage: release.sh VERSION [OUTDIR]; VERSION like v1.2.3 or v1.2.3-rc.1, not '$version'" >&2
	exit 2
fi
out=${2:-dist/$version}
mkdir -p "$out/completions"
out=$(cd "$out" && pwd)
. scripts/deps.sh
command -v file >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq file >/dev/null; }
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
	echo "release: warning: the work tree has changes not committed; the binaries hold them" >&2
fi
host=$(go env GOHOSTARCH)
archs=(amd64 arm64)
declare -A qemu=([amd64]=qemu-x86_64-static [arm64]=qemu-aarch64-static)
declare -A elf=([amd64]=x86-64 [arm64]=aarch64)

step() { printf '\n== release: %s\n' "$*" >&2; }

step "seccomp programs compiled in are the current table's (${archs[*]})"
for arch in "${archs[@]}"; do
	api=()
	[ "$arch" = "$host" ] || api=(-libseccomp-api 3)
	bash scripts/cross.sh "$arch" go test -count=1 ./sandbox/seccomp "${api[@]}"
done

for arch in "${archs[@]}"; do
	bin=$out/corral-linux-$arch
	step "building $bin"
	start=$SECONDS
	CORRAL_VERSION=$version bash scripts/cross.sh "$arch" bash scripts/build.sh "$bin"
	echo "built in $((SECONDS - start)) s, $(stat -c %s "$bin") bytes" >&2

	desc=$(file -b "$bin")
	if [[ $desc != *"statically linked"* || $desc != *"${elf[$arch]}"* ]]; then
		echo "release: $bin is not a static ${elf[$arch]} binary: $desc" >&2
		exit 1
	fi
	# The seccomp programs are embedded byte for byte.
	for prog in "sandbox/seccomp/$arch.bpf" "sandbox/seccomp/${arch}_restricted.bpf"; do
		if ! od -An -v -tx1 "$bin" | tr -d ' \n' | grep -qF "$(od -An -v -tx1 "$prog" | tr -d ' \n')"; then
			echo "release: $bin does not hold $prog" >&2
			exit 1
		fi
	done

	run=("$bin")
	[ "$arch" = "$host" ] || run=("${qemu[$arch]}" "$bin")
	got=$("${run[@]}" version)
	echo "$got" >&2
	if [[ $got != "corral $version linux/$arch "* ]]; then
		echo "release: $bin says '$got', not corral $version linux/$arch" >&2
		exit 1
	fi
	"${run[@]}" explain --skill skills/web-fetch --work-dir "$out" >/dev/null
	# Exit 0 is allow: the skill grants curl.
	"${run[@]}" check --skill skills/web-fetch --work-dir "$out" exec 'curl -fsSL https://example.com' >/dev/null
done

step "man page and completions"
# Made by this machine's binary, without the XDG folders of whoever runs
# this, so the defaults read ~/.config/... for everyone.
docs() { env -u XDG_CONFIG_HOME -u XDG_DATA_HOME "$out/corral-linux-$host" docs "$1"; }
docs man >"$out/corral.1"
docs bash >"$out/completions/corral.bash"
docs zsh >"$out/completions/_corral"
docs fish >"$out/completions/corral.fish"

step "SHA256SUMS"
(cd "$out" && sha256sum corral-linux-* corral.1 completions/* >SHA256SUMS && cat SHA256SUMS)
echo "release: $version in $out" >&2
