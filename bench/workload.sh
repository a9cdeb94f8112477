#!/usr/bin/env bash
# Workload benchmark (issue 28): an agent's everyday calls with warm
# caches, plainly, under corral (its private HOME keeps the caches between
# calls: docs/home.md) and under bubblewrap, interleaved
# (bench/interleaved.py): warm `go build` and `go test` of a small module,
# `npm ci` of a project whose dependency comes from a local tarball (no
# network), and `git status` in a repository of 10,000 files. Wall and
# CPU medians, and ratios to plain.
#
#   bash bench/workload.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v npm >/dev/null || need+=(npm)
command -v git >/dev/null || need+=(git)
if [ ${#need[@]} -gt 0 ]; then apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; fi
rounds=${1:-20}
bash scripts/build.sh bin/corral
corral=$PWD/bin/corral
inter=$PWD/bench/interleaved.py
ws=$(mktemp -d /var/tmp/corral-workload.XXXXXX)
trap 'rm -rf "$ws"' EXIT
gobin=$(command -v go)
bwrap=(bwrap --unshare-all --die-with-parent --bind / / --dev /dev --proc /proc --tmpfs /tmp)

# A Go module with a test that imports enough of the standard library to
# make the build cache matter.
mkdir -p "$ws/gomod"
cat > "$ws/gomod/go.mod" <<'EOF'
module example.com/bench

go 1.22
EOF
cat > "$ws/gomod/main.go" <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"text/template"
)

func render(v map[string]int) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func main() {
	template.Must(template.New("x").Parse("{{.}}"))
	fmt.Println(render(map[string]int{"a": 1}), http.StatusOK)
}
EOF
cat > "$ws/gomod/main_test.go" <<'EOF'
package main

import "testing"

func TestRender(t *testing.T) {
	if got := render(map[string]int{"a": 1}); got != `{"a":1}` {
		t.Fatal(got)
	}
}
EOF

# An npm project whose one dependency is a local tarball of 200 files.
mkdir -p "$ws/dep/lib" "$ws/npm"
printf '{"name":"dep","version":"1.0.0","main":"lib/f0.js"}\n' > "$ws/dep/package.json"
for i in $(seq 0 199); do echo "module.exports = $i;" > "$ws/dep/lib/f$i.js"; done
(cd "$ws/dep" && npm pack --silent --pack-destination "$ws/npm" >/dev/null)
printf '{"name":"app","version":"1.0.0","dependencies":{"dep":"file:dep-1.0.0.tgz"}}\n' > "$ws/npm/package.json"
(cd "$ws/npm" && npm install --silent --no-audit --no-fund >/dev/null)

# A git repository of 10,000 files in 100 folders.
mkdir -p "$ws/repo"
(cd "$ws/repo" && git init -q && for d in $(seq 0 99); do mkdir "d$d"; for f in $(seq 0 99); do echo "$d $f" > "d$d/f$f"; done; done &&
	git add -A && git -c user.name=b -c user.email=b@b commit -qm init)

bench() { # NAME DIR ARGV...
	local name=$1 dir=$2
	shift 2
	local argv
	argv=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@")
	local b
	b=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${bwrap[@]}" "$@")
	local c
	c=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$corral" exec --work-dir "$dir" -- "$@")
	local l
	l=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$corral" exec --tier landlock --work-dir "$dir" -- "$@")
	printf '\n### %s\n\n' "$name"
	python3 "$inter" "$rounds" "{\"plain\": $argv, \"corral\": $c, \"corral-landlock\": $l, \"bwrap\": $b}" "$dir"
}

printf '%s, %s cores, kernel %s, %s rounds, go %s, npm %s, git %s\n' "$(date -u +%F)" "$(nproc)" "$(uname -r)" "$rounds" \
	"$(go env GOVERSION)" "$(npm --version)" "$(git --version | cut -d' ' -f3)"
bench "go build (warm)" "$ws/gomod" "$gobin" build -o app .
bench "go test (warm, -count=1)" "$ws/gomod" "$gobin" test -count=1 ./...
bench "npm ci (warm cache, local tarball)" "$ws/npm" npm ci --offline --no-audit --no-fund --silent
bench "git status, 10k files" "$ws/repo" git status --short
