#!/usr/bin/env bash
# Builds corral and runs it for real: the python-data sample skill crunches
# CSV files in a scratch workspace, and a few hostile commands are refused.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
bash scripts/build.sh bin/corral
C=$PWD/bin/corral
skills=$PWD/skills
ws=$(mktemp -d /tmp/corral-demo.XXXXXX)
mkdir -p "$ws/data"
printf 'a,b\n1,2\n3,4\n' > "$ws/data/one.csv"
printf 'x\n1\n' > "$ws/data/two.csv"
secret=$(mktemp /tmp/corral-demo-secret.XXXXXX)
echo "s3cr3t" > "$secret"

show() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@" || echo "(exit status $?)"; }
cd "$ws"
show "$C" doctor
show "$C" check --skill "$skills/web-fetch" net api.example.com:443
show "$C" check --skill "$skills/web-fetch" net 0x7f000001:443
show "$C" check --skill "$skills/api-a" --skill "$skills/api-b" exec 'curl -s https://api.a.com | python3 -c pass'
show "$C" check --skill "$skills/repo-review" exec 'cat x > /etc/passwd'
show "$C" exec --skill "$skills/python-data" -- python3 "$skills/python-data/crunch.py"
show "$C" exec --skill "$skills/python-data" -- python3 -c "print(open('$secret').read())"
show "$C" exec --skill "$skills/python-data" -- curl -s http://example.com
show "$C" exec --skill "$skills/python-data" -- sh -c 'echo pwned > /etc/motd'
# A program outside the exec list, started through the allowed dynamic
# loader: its folder is bound noexec, so the loader cannot map it.
if [ -x /usr/lib/git-core/git ] && [ -e /lib64/ld-linux-x86-64.so.2 ]; then
	show "$C" exec --skill "$skills/python-data" -- python3 -c "import subprocess; subprocess.run(['/lib64/ld-linux-x86-64.so.2', '/usr/lib/git-core/git', '--version'])"
fi
show "$C" exec -- sh -c 'grep -E "^(Cap|NoNewPrivs|Seccomp)" /proc/self/status; ls /home /root'

# The egress proxy: a skill may reach demo.test on a port of a server this
# script starts on 127.0.0.1 (pinned with --resolve; loopback needs its
# preset), and nothing else.
port=$((20000 + RANDOM % 20000))
mkdir -p "$ws/site" "$ws/demo-net"
echo "hello through corral's proxy" > "$ws/site/index.html"
/usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 --directory "$ws/site" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
cat > "$ws/demo-net/SKILL.md" <<EOF
---
name: demo-net
description: fetch one page from the demo server
permissions:
  network:
    allow: ["demo.test:$port", "preset:loopback:$port"]
  exec: [curl, sh]
---
EOF
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
show "$C" exec --skill "$ws/demo-net" --resolve demo.test=127.0.0.1 -- curl -sS "http://demo.test:$port/"
show "$C" exec --skill "$ws/demo-net" --resolve demo.test=127.0.0.1 -- sh -c "curl -sS -o /dev/null -w '%{http_code}\n' http://169.254.169.254/latest/meta-data/; curl -sS --noproxy '*' -m 2 http://127.0.0.1:$port/"
show cat "$ws/out/summary.txt"
rm -rf "$ws" "$secret"
