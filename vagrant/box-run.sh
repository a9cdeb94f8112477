#!/usr/bin/env bash
# Runs as root inside one matrix VM, after provision.sh: builds corral,
# records the host's facts, `corral doctor` as root and as an unprivileged
# user, a few probe runs whose outcome EXPECTED.md predicts, the unit and
# kernel tests and the tests/ attack suite (root and unprivileged
# variants). Everything lands in /var/tmp/corral-results/<box>/, which
# run-matrix.sh copies out; summary.txt holds one key=value line per
# checked outcome (expected/<box>.txt lists the ones to compare).
#
#   box-run.sh BOX
#
# CORRAL_REPO (default /corral/main) is the repository; CORRAL_SKIP_TESTS=1
# stops after the probe runs (to try the script itself on a host).
set -uo pipefail
box=${1:?usage: box-run.sh BOX}
out=/var/tmp/corral-results/$box
rm -rf "$out"
mkdir -p "$out"
cd "${CORRAL_REPO:-/corral/main}"
. scripts/deps.sh >"$out/deps.log" 2>&1 || { echo "deps failed"; cat "$out/deps.log"; exit 1; }
set +e # deps.sh sets -e; a probe's non-zero status is data here
summary() { echo "$1=$2" | tee -a "$out/summary.txt"; }

summary box "$box"
if ! bash scripts/build.sh bin/corral >"$out/build.log" 2>&1; then
	summary build FAIL
	cat "$out/build.log"
	exit 1
fi
summary build ok
# A copy the unprivileged user can reach, first on PATH.
bindir=$(mktemp -d /var/tmp/corral-bin.XXXXXX)
chmod 0755 "$bindir"
install -m 0755 bin/corral "$bindir/corral"
export PATH="$bindir:$PATH"

# ---- host facts ----
{
	echo "os: $(. /etc/os-release; echo "$PRETTY_NAME")"
	echo "kernel: $(uname -r)"
	echo "lsm: $(cat /sys/kernel/security/lsm 2>/dev/null || echo '?')"
	echo "cgroup fs: $(stat -fc %T /sys/fs/cgroup)"
	echo "own cgroup: $(tr '\n' ' ' </proc/self/cgroup)"
	for s in user/max_user_namespaces kernel/unprivileged_userns_clone kernel/apparmor_restrict_unprivileged_userns; do
		echo "sysctl $s: $(cat /proc/sys/$s 2>/dev/null || echo absent)"
	done
	echo "selinux: $(getenforce 2>/dev/null || echo absent)"
	echo "libseccomp: $(pkg-config --modversion libseccomp 2>/dev/null || echo '?')"
	echo "go: $(go version)"
	echo "corral: $(corral version 2>&1)"
} >"$out/facts.txt" 2>&1
cat "$out/facts.txt"
summary kernel "$(uname -r)"
summary cgroup "$(stat -fc %T /sys/fs/cgroup)"

# ---- corral doctor ----
asUser() { setpriv --reuid 65534 --regid 65534 --clear-groups env PATH="$PATH" "$@"; }
corral doctor >"$out/doctor-root.txt" 2>&1
corral doctor --json >"$out/doctor-root.json" 2>&1
(cd /tmp && asUser corral doctor) >"$out/doctor-user.txt" 2>&1
summary landlock_abi "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["facts"]["landlock_abi"])' "$out/doctor-root.json" 2>/dev/null || echo '?')"
for who in root user; do
	f=$out/doctor-$who.txt
	if grep -q '^exec refuses to run here' "$f"; then summary "$who.doctor" refuses; else summary "$who.doctor" runs; fi
	summary "$who.dropped" "$(grep -o '\[NO \] [a-z-]*' "$f" | awk '{print $3}' | sort | paste -sd, -)"
done

# ---- probe runs ----
ws=$(mktemp -d /var/tmp/corral-ws.XXXXXX)
chmod 0777 "$ws"
probe() { # name, then the command; records the exit status and stderr
	local name=$1; shift
	(cd "$ws" && "$@") >"$out/probe-$name.out" 2>"$out/probe-$name.err"
	summary "$name" $?
	sed 's/^/    /' "$out/probe-$name.err" | head -5
}
probe root.true corral exec -- true
probe root.memory corral exec --memory 64M --pids 64 -- true
probe root.memory_parent corral exec --cgroup-parent corral-matrix --memory 64M --pids 64 -- true
probe root.best_effort corral exec --best-effort -- true
probe user.true asUser corral exec -- true
probe user.best_effort asUser corral exec --best-effort -- true
probe user.memory asUser corral exec --memory 64M -- true
rmdir /sys/fs/cgroup/corral-matrix /sys/fs/cgroup/*/corral-matrix 2>/dev/null
rm -rf "$ws"
if [ "${CORRAL_SKIP_TESTS:-0}" = 1 ]; then
	rm -rf "$bindir"
	exit 0
fi

# ---- unit, kernel and end-to-end tests ----
# Not CORRAL_REQUIRE_KERNEL: a feature this kernel lacks is a skip with
# its reason, which is what the matrix is for.
mapfile -t pkgs < <(go list ./... | grep -v '/tests$')
go test -count=1 "${pkgs[@]}" >"$out/unit.log" 2>&1
if grep -q '^FAIL' "$out/unit.log"; then summary unit FAIL; else summary unit ok; fi
go test -count=1 -v -timeout 30m ./tests >"$out/e2e.log" 2>&1
if grep -qE '^ok ' "$out/e2e.log"; then summary e2e ok; else summary e2e FAIL; fi
grep -E '^attacks:' "$out/e2e.log" | tee "$out/attacks.txt"
grep -E '^\s*--- (FAIL|SKIP)' "$out/e2e.log" >"$out/e2e-fail-skip.txt" || true
summary e2e.failed "$(grep -c -- '--- FAIL' "$out/e2e.log")"
summary e2e.skipped "$(grep -c -- '--- SKIP' "$out/e2e.log")"

if [ "${CORRAL_FUZZ:-0}" != 0 ]; then
	for pkg in ./skill ./policyengine ./netns ./cmd/corral; do
		for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
			go test -run '^$' -fuzz "^${target}\$" -fuzztime "${CORRAL_FUZZ}" "$pkg" >>"$out/fuzz.log" 2>&1 ||
				summary "fuzz.$target" FAIL
		done
	done
fi
rm -rf "$bindir"
chmod -R a+rX "$out"
echo "results in $out"
