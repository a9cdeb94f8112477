#!/usr/bin/env bash
# Egress-proxy benchmark: a 1 GiB transfer through a CONNECT tunnel against
# the same over direct loopback, the latency a new tunnel adds before its
# first byte, and the memory of 1,000 tunnels held open, in one run of
# bench/proxy (proxy, clients and servers in one process on 127.0.0.1).
# Prints a Markdown table; extra arguments go to the program.
#
#   bash bench/proxy.sh [-bytes N] [-reps N] [-iters N] [-tunnels N] [-buf N]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
go run ./bench/proxy -bytes $((1 << 30)) -reps 5 -iters 2000 -tunnels 1000 "$@"
