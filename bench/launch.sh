#!/usr/bin/env bash
# Launch-path benchmark: the per-call cost of running /bin/true plainly,
# under corral, under bubblewrap and under firejail, measured in one run with
# hyperfine, with medians and ratios, plus each launcher's peak memory.
#
#   bash bench/launch.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
for p in hyperfine bwrap firejail; do
	command -v $p >/dev/null || need+=("$p")
done
pkgs=()
for p in ${need[@]+"${need[@]}"}; do case $p in bwrap) pkgs+=(bubblewrap);; *) pkgs+=("$p");; esac; done
if [ ${#pkgs[@]} -gt 0 ]; then apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null; fi
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null; }

runs=${1:-200}
bash scripts/build.sh bin/corral
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
skills=$PWD/skills
cd "$ws"
corral=$OLDPWD/bin/corral
bench_skill=$OLDPWD/bench/skills/bench-true
net_skill=$OLDPWD/bench/skills/bench-net
net_any_skill=$OLDPWD/bench/skills/bench-net-any

declare -A cmds=(
	[plain]="/bin/true"
	[corral]="$corral exec --skill $bench_skill -- /bin/true"
	[corral-default]="$corral exec -- /bin/true"
	[corral-net]="$corral exec --skill $net_skill -- /bin/true"
	[corral-refused]="$corral exec --skill $skills/repo-review -- /bin/true"
	[corral-landlock]="$corral exec --tier landlock -- /bin/true"
	[corral-landlock-net]="$corral exec --tier landlock --skill $net_any_skill -- /bin/true"
	[bwrap]="bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc /bin/true"
	[firejail]="firejail --quiet --noprofile /bin/true"
)
order=(plain corral corral-default corral-net corral-refused corral-landlock corral-landlock-net bwrap firejail)
args=()
for name in "${order[@]}"; do args+=(-n "$name" "${cmds[$name]}"); done
hyperfine -N -i -w 20 -r "$runs" --export-json "$ws/h.json" "${args[@]}" >/dev/null 2>&1

peak() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
printf '\n%s, %s, kernel %s, %s runs each\n\n' "$(date -u +%F)" "$(nproc) cores" "$(uname -r)" "$runs"
printf '| launcher | median ms | mean ms | vs plain | vs bwrap | peak RSS KiB |\n|---|---:|---:|---:|---:|---:|\n'
python3 - "$ws/h.json" <<'PY' > "$ws/rows"
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
plain, bwrap = r["plain"]["median"], r["bwrap"]["median"]
for name, x in r.items():
    print(f'{name} {x["median"]*1e3:.2f} {x["mean"]*1e3:.2f} {x["median"]/plain:.1f}x {x["median"]/bwrap:.2f}x')
PY
while read -r name med mean vp vb; do
	# shellcheck disable=SC2086 # a command line, split on purpose
	printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$med" "$mean" "$vp" "$vb" "$(peak ${cmds[$name]})"
done < "$ws/rows"
echo
echo "corral-refused is repo-review, whose exec list lacks true: the preflight refuses it (exit 126) before a plan or a cgroup is made; the init corral's constructor forked (its namespaces made meanwhile) ends with corral."
echo "corral-net adds network.allow: the init makes the proxy's listening sockets and hands them to corral."
echo "corral-landlock is the default sandbox in the landlock tier (no namespaces); corral-landlock-net adds network.allow there (no exec list, which that tier refuses): corral listens on the host's loopback and serves the init's seccomp listener."
# The cgroup's share: how long PID 1, done with its mounts, waited for the
# cgroup files and the seccomp filter (the part of making the cgroup not
# hidden behind the mounts) and the removal.
for _ in $(seq 50); do CORRAL_TRACE=1 $corral exec -- /bin/true 2>&1 >/dev/null; sleep 0.05; done |
	python3 -c '
import re, statistics, sys
wait, rm = [], []
for line in sys.stdin:
    m = re.search(r"init: late +(\d+)", line)
    if m: wait.append(int(m.group(1)))
    m = re.search(r"cgroup removed in (\d+)", line)
    if m: rm.append(int(m.group(1)))
if wait:
    print(f"cgroup cost per launch (50 runs, 50 ms apart): PID 1 waited a median {statistics.median(wait)/1000:.2f} ms (p90 {sorted(wait)[len(wait)*9//10]/1000:.2f}) after its mounts for the cgroup and the filter; removal {statistics.median(rm)/1000:.2f} ms")
'
echo "peak RSS is the largest single process (corral's parent or its init stage; /usr/bin/time -f %M)."
# hyperfine runs each command's 200 runs in a block, so the machine's drift
# (1-2 ms here over minutes) lands in the ratios. Interleaved rounds, one
# run of each launcher per round, share the drift.
echo
echo "interleaved, ${runs} rounds (one run of each per round), medians:"
python3 - "$runs" "${cmds[bwrap]}" "${cmds[corral-default]}" "${cmds[corral]}" <<'PY'
import resource, statistics, subprocess, sys, time
runs, cmds = int(sys.argv[1]), sys.argv[2:]
names = ["bwrap", "corral-default", "corral"]
wall = [[] for _ in cmds]
cpu = [[] for _ in cmds]
for _ in range(runs):
    for i, c in enumerate(cmds):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(c.split(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall[i].append((time.perf_counter() - t) * 1e3)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[i].append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3)
w = [statistics.median(x) for x in wall]
c = [statistics.mean(x) for x in cpu]
for n, wm, cm in zip(names, w, c):
    print(f"  {n}: wall {wm:.2f} ms ({wm / w[0]:.2f}x bwrap), CPU {cm:.2f} ms ({cm / c[0]:.2f}x bwrap)")
print("  (wall: medians, each including about 0.5 ms of Python's fork and exec; CPU: means of user+system time of the process and its children)")
PY
