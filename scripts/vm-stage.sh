#!/usr/bin/env bash
# Builds what a matrix VM runs, so the guests need no Go toolchain: a
# static corral (scripts/build.sh), the static attack helper, one static
# test binary per package that has tests, and the repository's files (the
# tests read their testdata and skills/ from the package folders).
#
#   bash scripts/vm-stage.sh DIR
#
# DIR gets bin/corral, bin/corral-test (the same with the end-to-end
# tests' hooks, -tags corral_testhooks), bin/probe, tests/<pkg>.test (with
# tests/packages listing "<pkg> <folder>" pairs) and src/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
dir=${1:?usage: vm-stage.sh DIR}
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/tests" "$dir/src"
bash scripts/build.sh "$dir/bin/corral"
GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=corral_testhooks" bash scripts/build.sh "$dir/bin/corral-test"
CGO_ENABLED=0 go build -o "$dir/bin/probe" ./tests/testdata/probe
CGO_ENABLED=0 go build -o "$dir/bin/nouserns" ./tests/testdata/nouserns
module=$(go list -m)
static=(-ldflags '-linkmode external -extldflags "-static"')
: >"$dir/tests/packages"
for pkg in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); do
	rel=${pkg#"$module"}
	rel=${rel#/}
	name=${rel:-root}
	name=${name//\//_}
	# The linker warns that static glibc's NSS (os/user, getaddrinfo)
	# needs the guest's shared libraries at run time; the guests resolve
	# users from /etc/passwd and names from /etc/hosts, which is enough.
	if ! go test -c "${static[@]}" -o "$dir/tests/$name.test" "$pkg" >"$dir/build.log" 2>&1; then
		cat "$dir/build.log" >&2
		echo "vm-stage: building the tests of $pkg failed" >&2
		exit 1
	fi
	echo "$name ${rel:-.}" >>"$dir/tests/packages"
done
# The working tree as git sees it (tracked and new files, not ignored).
git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$dir/src"
rm -f "$dir/build.log"
chmod -R a+rX "$dir"
