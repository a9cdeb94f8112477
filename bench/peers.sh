#!/usr/bin/env bash
# Peer benchmark: the per-call cost of corral against bubblewrap, firejail
# and Anthropic's sandbox-runtime (srt), side by side with hyperfine, for
# three workloads:
#
#   true      the command alone
#   pipeline  sh -c 'seq 1000 | sort -n | tail -1'
#   fetch     curl of a small file from a loopback HTTP server this script
#             starts on 127.0.0.1, through the tool's egress proxy where
#             it has one (corral, srt); bwrap and firejail have none, so
#             they fetch directly with the host's network shared
#
# Installs what is missing (hyperfine, bubblewrap, firejail, socat and
# ripgrep from Debian; srt from npm into ~/.cache/corral-peers), checks each
# command once (and that corral's and srt's proxies refuse a port they do
# not allow, so the fetch really goes through them), measures, and writes
# docs/peers.md with the date and the machine.
#
#   bash bench/peers.sh [RUNS [ROUNDS]]  # RUNS per command and round
#                                        # (default 60), ROUNDS default 2
#
# The rounds run one after the other; the table gives the median of all
# runs of a command and, beside it, the lowest and highest median of a
# round, since a shared machine moves them.
#
# Only 127.0.0.1 is ever contacted.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
. scripts/deps.sh
runs=${1:-60}
rounds=${2:-2}
srt_version=${SRT_VERSION:-0.0.83}
peers_dir=${CORRAL_PEERS_DIR:-$HOME/.cache/corral-peers}

need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v firejail >/dev/null || need+=(firejail)
command -v socat >/dev/null || need+=(socat)
command -v rg >/dev/null || need+=(ripgrep) # srt refuses to start without rg
command -v npm >/dev/null || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
srt=$peers_dir/node_modules/.bin/srt
if [ ! -x "$srt" ] || [ "$("$srt" --version 2>/dev/null)" != "$srt_version" ]; then
	npm install --silent --no-audit --no-fund --prefix "$peers_dir" "@anthropic-ai/sandbox-runtime@$srt_version" >/dev/null
fi

bash scripts/build.sh bin/corral
corral=$repo/bin/corral
ws=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$ws"
}
trap cleanup EXIT

# The loopback server: a small file on a free port of 127.0.0.1.
mkdir "$ws/www"
echo "corral peer benchmark" >"$ws/www/hello"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$ws/www" >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/hello" >/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$port/hello
denied=http://127.0.0.1:$((port == 65535 ? port - 1 : port + 1))/hello

cat >"$ws/srt.json" <<EOF
{"network": {"allowedDomains": ["127.0.0.1:$port"], "deniedDomains": []},
 "filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []}}
EOF
local_skill=$repo/bench/peers/skills/peer-local
fetch_skill=$repo/bench/peers/skills/peer-fetch
pipeline="sh -c 'seq 1000 | sort -n | tail -1'"
# --noproxy '': the sandboxes set NO_PROXY=127.0.0.1, and the fetch must go
# through their proxy, so curl is told to use it for 127.0.0.1 too.
fetch="curl -sf --noproxy '' -o /dev/null $url"
bwrap_args="bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc"

tools=(plain corral bwrap firejail srt)
declare -A cmd
cmd[plain.true]="true"
cmd[plain.pipeline]="$pipeline"
cmd[plain.fetch]="$fetch"
cmd[corral.true]="$corral exec --skill $local_skill -- true"
cmd[corral.pipeline]="$corral exec --skill $local_skill -- $pipeline"
cmd[corral.fetch]="$corral exec --skill $fetch_skill -- $fetch"
cmd[bwrap.true]="$bwrap_args true"
cmd[bwrap.pipeline]="$bwrap_args $pipeline"
cmd[bwrap.fetch]="${bwrap_args/--unshare-all/--unshare-all --share-net} $fetch"
cmd[firejail.true]="firejail --quiet --noprofile true"
cmd[firejail.pipeline]="firejail --quiet --noprofile $pipeline"
cmd[firejail.fetch]="firejail --quiet --noprofile $fetch"
cmd[srt.true]="$srt --settings $ws/srt.json -- true"
cmd[srt.pipeline]="$srt --settings $ws/srt.json -- $pipeline"
cmd[srt.fetch]="$srt --settings $ws/srt.json -- $fetch"

cd "$ws"
# Every command works once, and the proxies are in the fetch's path: a
# port they do not allow is refused.
for key in "${!cmd[@]}"; do
	if ! eval "${cmd[$key]}" >/dev/null 2>"$ws/err"; then
		echo "peers: $key fails: ${cmd[$key]}" >&2
		cat "$ws/err" >&2
		exit 1
	fi
done
for tool in corral srt; do
	c=${cmd[$tool.fetch]/$url/$denied}
	if eval "$c" >/dev/null 2>&1; then
		echo "peers: $tool fetched a port its policy does not allow: the fetch does not go through its proxy" >&2
		exit 1
	fi
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$rounds"); do
	for w in true pipeline fetch; do
		args=()
		for tool in "${tools[@]}"; do args+=(-n "$tool" "${cmd[$tool.$w]}"); done
		echo "round $round: measuring $w ($runs runs each)" >&2
		if ! hyperfine -N -w 5 -r "$runs" --export-json "$ws/$w.$round.json" "${args[@]}" >"$ws/hyperfine.log" 2>&1; then
			# A command that fails once fails the benchmark: say which.
			cat "$ws/hyperfine.log" >&2
			exit 1
		fi
	done
done

machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/^Mem:/{print $2}') GiB, kernel $(uname -r), $(. /etc/os-release; echo "$PRETTY_NAME"), load average before the run $load"
versions="corral ${CORRAL_REV:-$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')} ($("$corral" version)), $(bwrap --version), firejail $(firejail --version | awk 'NR==1{print $3}'), sandbox-runtime $("$srt" --version) (socat $(socat -V | awk '/socat version/{print $3}'), Node $(node --version)), $(curl --version | awk 'NR==1{print $1, $2}'), hyperfine $(hyperfine --version | awk '{print $2}')"
out=$repo/docs/peers.md
python3 - "$ws" "$runs" "$rounds" "$(date -u +%F)" "$machine" "$versions" >"$out" <<'PY'
import json, statistics, sys
ws, runs, rounds, date, machine, versions = sys.argv[1:]
W = ("true", "pipeline", "fetch")
T = ("plain", "corral", "bwrap", "firejail", "srt")
# times[w][tool]: every run of every round; rmed[w][tool]: each round's median
times = {w: {t: [] for t in T} for w in W}
rmed = {w: {t: [] for t in T} for w in W}
for w in W:
    for r in range(1, int(rounds) + 1):
        for x in json.load(open(f"{ws}/{w}.{r}.json"))["results"]:
            times[w][x["command"]] += x["times"]
            rmed[w][x["command"]].append(x["median"])
med = {w: {t: statistics.median(times[w][t]) * 1e3 for t in T} for w in W}
path = {
    "plain": "direct, no sandbox",
    "corral": "corral's egress proxy (`preset:loopback` rule)",
    "bwrap": "direct, host network shared (`--share-net`): no egress proxy",
    "firejail": "direct, host network shared: no egress proxy",
    "srt": "srt's proxy over its socat bridge (`allowedDomains`)",
}
print("# corral and its peers, per call\n")
print(f"Measured by `bash bench/peers.sh {runs} {rounds}` on {date}: {machine}.\n")
print(f"Versions: {versions}.\n")
print(f"Median wall time of one whole call in milliseconds, over {rounds} rounds of {runs} runs")
print("(each after 5 warm-up runs); every round measures all tools in one hyperfine run per")
print("workload (`-N`, no shell). The × columns are the ratio to corral's median.\n")
print("| tool | `true` | × | pipeline | × | fetch | × | fetch goes |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
for t in T:
    cells = []
    for w in W:
        cells += [f"{med[w][t]:.1f}", f"{med[w][t] / med[w]['corral']:.2f}"]
    print(f"| {t} | " + " | ".join(cells) + f" | {path[t]} |")
print()
print("Lowest–highest median of a round, and the fastest–slowest single run, in ms:\n")
print("| tool | `true` | pipeline | fetch |")
print("|---|---|---|---|")
for t in T:
    cells = [f"{min(rmed[w][t])*1e3:.1f}–{max(rmed[w][t])*1e3:.1f} ({min(times[w][t])*1e3:.1f}–{max(times[w][t])*1e3:.1f})" for w in W]
    print(f"| {t} | " + " | ".join(cells) + " |")
PY
cat >>"$out" <<'EOF'

What each tool does per call:

- **pipeline** is `sh -c 'seq 1000 | sort -n | tail -1'`; **fetch** is
  `curl -sf --noproxy '' -o /dev/null http://127.0.0.1:PORT/hello` against a
  Python `http.server` the script starts on a free loopback port (curl is
  told to use the proxy for 127.0.0.1, which the sandboxes' `NO_PROXY`
  would otherwise exempt).
- **corral**: `corral exec --skill bench/peers/skills/peer-local` (an exec
  allowlist of sh, seq, sort, tail and true, the work dir readable, no
  network) for `true` and the pipeline; `--skill
  bench/peers/skills/peer-fetch` (curl only, `network.allow:
  ["preset:loopback"]`) for the fetch, which goes through the egress proxy
  corral serves for the sandbox's network namespace. Every call makes and
  removes its own cgroup (512 MiB, 1024 processes). Before measuring, the
  script checks that corral's proxy refuses a port next to the server's,
  so the fetch is known to take the proxy.
- **bwrap**: `bwrap --unshare-all --die-with-parent --ro-bind / / --dev
  /dev --proc /proc CMD`, the whole host read-only, no Landlock, no
  seccomp filter, no cgroup; for the fetch `--share-net` (bubblewrap has no
  proxy: a sandbox either has the host's network or none).
- **firejail**: `firejail --quiet --noprofile CMD` (no profile: the
  cheapest firejail call; the host's network is shared).
- **srt**: `srt --settings srt.json -- CMD` with `allowedDomains:
  ["127.0.0.1:PORT"]` and writes allowed in the work dir. On Linux srt
  starts its HTTP and SOCKS proxies in Node, bridges them into a bubblewrap
  sandbox with socat over UNIX sockets, and looks for paths to deny with
  ripgrep (it refuses to start without `rg`), on every call; as for
  corral, the script checks that its proxy refuses a port it does not
  allow.
- **plain** runs the command with no sandbox.

The numbers are medians on a shared 2-core machine: rerun to see how much
they move (bwrap's median moved by about a millisecond between runs of
`bench/launch.sh`). They compare whole calls as an agent runtime makes
them, each tool with the policy it needs for the workload; they do not
compare what each tool enforces (see the README's protections table).
EOF
echo "wrote $out" >&2
cat "$out"
