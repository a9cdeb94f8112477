#!/usr/bin/env bash
# Checks that corral installs and imports as a Go module, offline (only the
# module cache this machine already has; no network):
#
#  1. a scratch module that requires corral.dev/corral with a replace to
#     this checkout builds the CLI (go build corral.dev/corral/cmd/corral)
#     and a program that imports the API (package corral.dev/corral) and
#     asks it a question;
#  2. `go install corral.dev/corral/cmd/corral@v0.0.0-test` from a module
#     proxy in a folder (the layout proxy.golang.org serves: @v/list,
#     .info, .mod, .zip) builds a corral whose `corral version` says
#     v0.0.0-test.
#
# The module is the checkout's tracked files as they are now (git stash
# create: uncommitted changes included, untracked files not). Dependencies
# come from the module cache's download folder, itself a valid file://
# proxy. Step 1 checks them against corral's go.sum as any build does.
# go install pkg@version checks what it fetches against the checksum
# database alone, never the module's go.sum, and the database is not
# reachable offline: step 2 turns it off (GOSUMDB=off) and compares the
# hash of every module it fetched with corral's go.sum itself.
# Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh

repo=$(pwd)
version=v0.0.0-test
cache=$(go env GOMODCACHE)/cache/download
tmp=$(mktemp -d /tmp/corral-install.XXXXXX)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
# The module cache must hold every module of corral's graph, also those
# only its dependencies' go.mod files name (go-spew, through cgroups' and
# testify's): a machine whose cache was filled by builds alone lacks
# them. Fetched while the module proxy may be reachable; offline after.
GOFLAGS=-modcacherw go mod download || echo "install-test: go mod download failed; the offline steps use the cache as it is"
# Every step offline, with this Go, outside any workspace.
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-modcacherw
start=$SECONDS

echo "install-test: a scratch module with replace corral.dev/corral => $repo"
mkdir "$tmp/scratch"
cat >"$tmp/scratch/go.mod" <<EOF
module example.com/scratch

go $(awk '/^go /{print $2}' go.mod)

require corral.dev/corral v0.0.0

replace corral.dev/corral => $repo
EOF
cp go.sum "$tmp/scratch/go.sum"
cat >"$tmp/scratch/main.go" <<'EOF'
// Command scratch loads a skill through corral's API and asks the policy
// engine one question, as a program importing corral would.
package main

import (
	"fmt"
	"os"

	"corral.dev/corral"
)

func main() {
	skills, err := corral.LoadSkills(os.Args[1:], corral.Dirs{WorkDir: os.TempDir()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(skills.Engine.CheckURL("https://api.example.com/v1").Action)
}
EOF
GOFLAGS="$GOFLAGS -mod=mod" GOPROXY=off go -C "$tmp/scratch" build -o "$tmp/api" .
GOFLAGS="$GOFLAGS -mod=mod" GOPROXY=off go -C "$tmp/scratch" build -o "$tmp/corral-replace" corral.dev/corral/cmd/corral
got=$("$tmp/api" "$repo/skills/web-fetch")
[ "$got" = allow ] || { echo "install-test: the API program printed '$got', not allow"; exit 1; }
"$tmp/corral-replace" version

echo "install-test: go install corral.dev/corral/cmd/corral@$version from a module proxy in $tmp/proxy"
rev=$(git stash create)
at="$tmp/proxy/corral.dev/corral/@v"
mkdir -p "$at"
git archive --format=zip --prefix="corral.dev/corral@$version/" -o "$at/$version.zip" "${rev:-HEAD}"
git show "${rev:-HEAD}:go.mod" >"$at/$version.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$version" "$(git show -s --format=%cI "${rev:-HEAD}")" >"$at/$version.info"
echo "$version" >"$at/list"
# A module cache of its own, so a second run does not find the first
# one's corral@v0.0.0-test; -trimpath keeps the build cache's entries for
# the dependencies valid from one cache folder to the next.
GOMODCACHE="$tmp/modcache" GOPROXY="file://$tmp/proxy,file://$cache" GOSUMDB=off \
	GOFLAGS="$GOFLAGS -trimpath" GOBIN="$tmp/bin" go install "corral.dev/corral/cmd/corral@$version"
# Each module's hash (the .ziphash go wrote when it fetched it) must be
# the one corral's go.sum records; module paths there spell an upper-case
# letter as ! and the lower-case one.
git show "${rev:-HEAD}:go.sum" >"$tmp/go.sum"
checked=0
while IFS= read -r f; do
	mod=${f#"$tmp/modcache/cache/download/"}
	# shellcheck disable=SC2001 # upper-casing the match (\u) takes sed
	path=$(sed 's/!\([a-z]\)/\u\1/g' <<<"${mod%/@v/*}")
	ver=${mod##*/@v/}
	ver=${ver%.ziphash}
	[ "$path" = corral.dev/corral ] && continue
	if ! grep -qxF "$path $ver $(cat "$f")" "$tmp/go.sum"; then
		echo "install-test: $path@$ver was fetched with hash $(cat "$f"), which corral's go.sum does not record"
		exit 1
	fi
	checked=$((checked + 1))
done < <(find "$tmp/modcache/cache/download" -name '*.ziphash')
[ "$checked" -gt 0 ] || { echo "install-test: go install fetched no dependencies to check"; exit 1; }
echo "install-test: $checked dependencies have the hashes in go.sum"
got=$("$tmp/bin/corral" version)
echo "$got"
[[ $got == "corral $version "* ]] || { echo "install-test: corral version says '$got', not $version"; exit 1; }
echo "install-test: passed in $((SECONDS - start)) s"
