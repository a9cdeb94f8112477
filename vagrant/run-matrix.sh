#!/usr/bin/env bash
# Runs the corral VM matrix: for each box (default: all of them), `vagrant
# up` provisions it (provision.sh, then box-run.sh, which builds corral and
# runs doctor, the probe runs and the test suites), copies its results to
# vagrant/results/<box>/, destroys the VM (unless --keep), and compares
# results/<box>/summary.txt with expected/<box>.txt. Prints one line per
# checked outcome and a table in results/matrix.md.
#
#   bash vagrant/run-matrix.sh [--keep] [--provider NAME] [BOX]...
#
# Needs vagrant and a hypervisor (libvirt or VirtualBox) with network
# access for the boxes and their packages; one box at a time, 4 GiB and 2
# CPUs each. Boxes: ubuntu-2404 ubuntu-2204 debian-12 fedora.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
keep=0
provider=()
boxes=()
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=1 ;;
	--provider) provider=(--provider "$2"); shift ;;
	-h | --help) sed -n '2,13p' "$0"; exit 0 ;;
	*) boxes+=("$1") ;;
	esac
	shift
done
[ ${#boxes[@]} -gt 0 ] || boxes=(ubuntu-2404 ubuntu-2204 debian-12 fedora)
command -v vagrant >/dev/null || { echo "run-matrix: vagrant is not installed (apt-get install vagrant)" >&2; exit 2; }
vagrant validate >/dev/null

# check BOX: compares the box's summary with its expectations; a value in
# expected/BOX.txt may be a shell pattern (6.8.*).
check() {
	local box=$1 exp=expected/$1.txt sum=results/$1/summary.txt key want got ok=0 bad=0
	: >"results/$box/check.txt"
	while IFS='=' read -r key want; do
		case $key in '' | '#'*) continue ;; esac
		got=$(grep -m1 "^$key=" "$sum" 2>/dev/null | cut -d= -f2- || true)
		# shellcheck disable=SC2053 # want is a pattern on purpose
		if [[ $got == $want ]]; then
			ok=$((ok + 1))
			echo "  match  $key=$got" >>"results/$box/check.txt"
		else
			bad=$((bad + 1))
			echo "  DIFF   $key: got '${got:-<missing>}', expected '$want'" | tee -a "results/$box/check.txt"
		fi
	done <"$exp"
	echo "$box: $ok as expected, $bad differ" | tee -a "results/$box/check.txt"
	printf '| %s | %s | %s | %s | %s |\n' "$box" "$(grep -m1 '^kernel=' "$sum" | cut -d= -f2)" \
		"$(grep -m1 '^landlock_abi=' "$sum" | cut -d= -f2)" "$ok" "$bad" >>results/matrix.md
}

mkdir -p results
printf '# corral VM matrix, %s\n\n| box | kernel | Landlock ABI | as expected | differ |\n|---|---|---:|---:|---:|\n' "$(date -u +%F)" >results/matrix.md
status=0
for box in "${boxes[@]}"; do
	[ -f "expected/$box.txt" ] || { echo "run-matrix: unknown box $box" >&2; exit 2; }
	echo "== $box"
	rm -rf "results/$box"
	mkdir -p "results/$box"
	if ! vagrant up "$box" ${provider[@]+"${provider[@]}"} --provision 2>&1 | tee "results/$box/vagrant-up.log"; then
		echo "run-matrix: vagrant up $box failed (results/$box/vagrant-up.log)" >&2
		status=1
	fi
	# Copy the results out (rsync synced folders only go in).
	vagrant ssh "$box" -c "sudo tar -C /var/tmp/corral-results/$box -czf - ." 2>/dev/null |
		tar -xzf - -C "results/$box" || echo "run-matrix: no results from $box" >&2
	[ $keep = 1 ] || vagrant destroy -f "$box"
	check "$box" || status=1
	grep -q '  DIFF' "results/$box/check.txt" && status=1
done
echo
cat results/matrix.md
exit $status
