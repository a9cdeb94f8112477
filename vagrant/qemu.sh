#!/usr/bin/env bash
# Runs the corral VM matrix on this machine with QEMU, no hypervisor
# service and no downloaded boxes: each box's root file system is built
# from Debian's apt packages with mmdebstrap, booted directly (-kernel,
# -initrd) under KVM when /dev/kvm works and QEMU's software emulation
# (TCG) otherwise, with no network card. A systemd unit in the guest runs
# vagrant/guest-job.sh from a 9p share, which writes
# results/<box>/summary.txt, and powers the VM off. The summary is then
# compared with expected/<box>.txt: one line per mismatch, a table at the
# end, and a non-zero exit status on any mismatch.
#
#   bash vagrant/qemu.sh [BOX]...        # default: every box
#   bash vagrant/qemu.sh --images [BOX]...   # only build (or find) images
#
# Boxes: debian-11 debian-12 debian-13 debian-sid debian-12-cgroup1
# debian-13-nouserns. Environment:
#   CORRAL_VM_CACHE   where images are kept (default /var/tmp/corral-vm);
#                     an image is named by its suite, the day it was built
#                     and a hash of how it is built, so a rerun on the same
#                     day reuses it and a change to the recipe rebuilds it
#   CORRAL_VM_SUITES  which suites the guest runs: "unit e2e" (default), a
#                     subset, or "none" for doctor and the probe runs only
#   CORRAL_VM_ROOT_SUITES  root's suites, when they differ from
#                     CORRAL_VM_SUITES (CI: "unit"; the host's end-to-end
#                     pass runs as root, the guest's as the user)
#   CORRAL_VM_USERS   "root user" (default), or one of them
#   CORRAL_VM_E2E_NOBODY  0 leaves the nobody variants out of root's
#                     end-to-end pass (CI: the user's pass covers them)
#   CORRAL_VM_TIMEOUT seconds a box may run (default 3600)
#   CORRAL_VM_ACCEL   kvm or tcg (default: kvm when it works)
#
# The host builds everything the guest runs (a static corral, the attack
# helper and one static test binary per package, scripts/vm-stage.sh), so
# the guests need no Go toolchain and no network. Needs root, mmdebstrap,
# qemu-system-x86 and e2fsprogs; it installs them with apt when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cache=${CORRAL_VM_CACHE:-/var/tmp/corral-vm}
all_boxes=(debian-11 debian-12 debian-13 debian-sid debian-12-cgroup1 debian-13-nouserns)

boxes=()
images_only=0
for a in "$@"; do
	case $a in
	-h | --help) sed -n '2,33p' "$0"; exit 0 ;;
	--images) images_only=1 ;;
	-*) echo "qemu.sh: unknown option $a" >&2; exit 2 ;;
	*) boxes+=("$a") ;;
	esac
done
[ ${#boxes[@]} -gt 0 ] || boxes=("${all_boxes[@]}")

# suite BOX: the Debian suite a box boots; cmdline BOX: what its kernel
# command line adds.
suite() {
	case $1 in
	debian-11) echo bullseye ;;
	debian-12 | debian-12-cgroup1) echo bookworm ;;
	debian-13 | debian-13-nouserns) echo trixie ;;
	debian-sid) echo sid ;;
	*) return 1 ;;
	esac
}
cmdline() {
	case $1 in
	# systemd then mounts the v1 hierarchies (with the v2 one at
	# /sys/fs/cgroup/unified): the layout of hosts before v2.
	debian-12-cgroup1) echo "systemd.unified_cgroup_hierarchy=0 SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1" ;;
	# Debian's own switch for unprivileged user namespaces, off: users
	# cannot make them, root still can.
	debian-13-nouserns) echo "sysctl.kernel.unprivileged_userns_clone=0" ;;
	esac
}
for box in "${boxes[@]}"; do
	suite "$box" >/dev/null || { echo "qemu.sh: unknown box $box (boxes: ${all_boxes[*]})" >&2; exit 2; }
	[ -f "$here/expected/$box.txt" ] || { echo "qemu.sh: no vagrant/expected/$box.txt" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "qemu.sh: needs root (mmdebstrap, mkfs and the 9p share)" >&2; exit 2; }

need=()
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
if [ ${#need[@]} -gt 0 ]; then
	echo "qemu.sh: installing ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# What every image holds: systemd with user sessions (lingering user
# managers need dbus-user-session for their bus), a kernel, and the
# programs the tests drive.
packages=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,linux-image-amd64,passwd,login,mount,util-linux,bsdutils,procps,python3,git,curl,iproute2,kmod,perl,netcat-openbsd,busybox,jq,make
# suite_packages SUITE: what only some suites' images add. trixie's
# (debian-13, debian-13-nouserns): apparmor, whose 4.x parser the guest
# job's `corral setup apparmor` check needs (abi 4.0 and the userns rule).
suite_packages() {
	case $1 in
	trixie) echo ,apparmor ;;
	esac
}
# recipe_hash SUITE: what names an image's recipe (the same as before
# suite_packages for the suites that add nothing).
recipe_hash() { (echo "$packages$(suite_packages "$1")"; cat "$here/guest-setup.sh") | sha256sum | cut -c1-12; }

# image SUITE: builds (or finds) the image for a suite and prints its
# folder, which holds disk.img, vmlinuz and initrd.img.
image() {
	local suite=$1 dir root
	dir=$cache/$suite-$(date -u +%Y%m%d)-$(recipe_hash "$suite")
	if [ -f "$dir/disk.img" ]; then
		echo "$dir"
		return
	fi
	mkdir -p "$cache"
	root=$(mktemp -d "$cache/root.XXXXXX")
	echo "qemu.sh: building the $suite image (mmdebstrap, about a minute)" >&2
	# sid's Release file can be older than its Valid-Until on a mirror
	# that lags; the images are for tests, not for installing updates.
	if ! mmdebstrap --variant=apt --include="$packages$(suite_packages "$suite")" \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--customize-hook="bash $here/guest-setup.sh \"\$1\"" \
		"$suite" "$root" http://deb.debian.org/debian >"$cache/$suite.build.log" 2>&1; then
		echo "qemu.sh: mmdebstrap $suite failed; the end of $cache/$suite.build.log:" >&2
		tail -20 "$cache/$suite.build.log" >&2
		rm -rf "$root"
		return 1
	fi
	local tmp=$dir.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	cp "$(printf '%s\n' "$root"/boot/vmlinuz-* | sort -V | tail -1)" "$tmp/vmlinuz"
	cp "$(printf '%s\n' "$root"/boot/initrd.img-* | sort -V | tail -1)" "$tmp/initrd.img"
	# A sparse 6 GiB file: the tests write their temporary folders here.
	mkfs.ext4 -q -L corral-root -d "$root" "$tmp/disk.img" 6G >&2
	rm -rf "$root"
	mv "$tmp" "$dir"
	# Yesterday's images of this suite are no longer used.
	find "$cache" -maxdepth 1 -name "$suite-*" ! -name "$(basename "$dir")" -exec rm -rf {} +
	echo "$dir"
}

# accel: kvm when /dev/kvm is there and the CPU shows its virtualisation
# extensions (a /dev/kvm without them cannot run a VM), tcg otherwise.
accel() {
	if [ -n "${CORRAL_VM_ACCEL:-}" ]; then
		echo "$CORRAL_VM_ACCEL"
	elif [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
		echo kvm
	else
		echo tcg
	fi
}

# suitesOf WHO: the suites the guest runs for root or user.
suitesOf() {
	if [ "$1" = root ]; then
		echo "${CORRAL_VM_ROOT_SUITES:-${CORRAL_VM_SUITES:-unit e2e}}"
	else
		echo "${CORRAL_VM_SUITES:-unit e2e}"
	fi
}

# check BOX: compares the box's summary with its expectations; a value in
# expected/BOX.txt may be a shell pattern (6.1.*).
check() {
	local box=$1 exp=$here/expected/$1.txt res=$here/results/$1 key want got ok=0 bad=0
	local sum=$res/summary.txt
	: >"$res/check.txt"
	while IFS='=' read -r key want; do
		case $key in '' | '#'*) continue ;; esac
		# What this run was asked not to do is not compared.
		if [[ $key == *.unit || $key == *.e2e ]] &&
			{ [[ " $(suitesOf "${key%%.*}") " != *" ${key#*.} "* ]] || [[ " ${CORRAL_VM_USERS:-root user} " != *" ${key%%.*} "* ]]; }; then
			echo "  skip   $key" >>"$res/check.txt"
			continue
		fi
		got=$(grep -m1 "^$key=" "$sum" 2>/dev/null | cut -d= -f2- || true)
		# shellcheck disable=SC2053 # want is a pattern on purpose
		if [[ $got == $want ]]; then
			ok=$((ok + 1))
			echo "  match  $key=$got" >>"$res/check.txt"
		else
			bad=$((bad + 1))
			echo "$box: $key is '${got:-<missing>}', expected '$want'" | tee -a "$res/check.txt"
			# A suite that failed names its failed tests, and the end
			# of each one's output, where CI prints only this.
			if [[ $key == *.unit || $key == *.e2e ]] && [ -s "$res/$key.failed.txt" ]; then
				sed "s/^/$box: $key: /" "$res/$key.failed.txt" | head -20 | tee -a "$res/check.txt"
				grep -B15 -E '^\s*--- FAIL' "$res/$key.log" 2>/dev/null | head -80 | sed "s/^/$box: $key|  /"
			fi
		fi
	done <"$exp"
	val() { grep -m1 "^$1=" "$sum" 2>/dev/null | cut -d= -f2- || true; }
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$box" "$(val kernel)" "$(val landlock_abi)" \
		"$(val cgroup)" "$(val root.memory_default)" "$(val user.memory_default)" \
		"$(val suites)" "$ok" "$bad" >>"$here/results/matrix.md"
	[ "$bad" = 0 ]
}

if [ $images_only = 1 ]; then
	for box in "${boxes[@]}"; do image "$(suite "$box")"; done
	exit 0
fi
# One stage per run: two runs (CI and a matrix) may share the cache.
mkdir -p "$cache"
stage=$(mktemp -d "$cache/stage.XXXXXX")
trap 'rm -rf "$stage" "$stage".*' EXIT
echo "qemu.sh: building corral and the test binaries on the host"
bash "$repo/scripts/vm-stage.sh" "$stage"
acc=$(accel)
echo "qemu.sh: accelerator $acc"

mkdir -p "$here/results"
{
	echo "# corral VM matrix, $(date -u +%F), $acc"
	echo
	echo "| box | kernel | Landlock ABI | cgroup | root: 600 MiB, no flags | user: 600 MiB, no flags | suites passed | as expected | differ |"
	echo "|---|---|---:|---|---|---|---|---:|---:|"
} >"$here/results/matrix.md"
status=0
for box in "${boxes[@]}"; do
	echo "== $box"
	res=$here/results/$box
	rm -rf "$res"
	mkdir -p "$res"
	img=$(image "$(suite "$box")") || { status=1; echo "$box: no image" | tee "$res/check.txt"; continue; }
	# A guest kernel that panics while it boots, before the job starts
	# (an int3 Oops in sched_clock_cpu under TCG's multi-threaded
	# emulation, seen once on a loaded host), is booted once more: it
	# says nothing of corral.
	for attempt in 1 2; do
		# The guest writes on a copy of the image, which is thrown away.
		disk=$stage.$box.img
		cp --sparse=always "$img/disk.img" "$disk"
		share=$stage.share-$box
		rm -rf "$share"
		mkdir -p "$share/results"
		cp -a "$stage/." "$share/"
		cp "$here/guest-job.sh" "$share/job.sh"
		printf 'BOX=%q\nSUITES=%q\nROOT_SUITES=%q\nUSERS=%q\nE2E_NOBODY=%q\n' "$box" "${CORRAL_VM_SUITES:-unit e2e}" "$(suitesOf root)" \
			"${CORRAL_VM_USERS:-root user}" "${CORRAL_VM_E2E_NOBODY:-1}" >"$share/job.env"
		cpu=max
		[ "$acc" = kvm ] && cpu=host
		start=$(date +%s)
		timeout "${CORRAL_VM_TIMEOUT:-3600}" qemu-system-x86_64 -accel "$acc$([ "$acc" = tcg ] && echo ,thread=multi)" \
			-cpu "$cpu" -m 3072 -smp 2 -nographic -no-reboot -nic none \
			-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
			-append "root=/dev/vda rw console=ttyS0 quiet panic=-1 $(cmdline "$box")" \
			-drive "file=$disk,format=raw,if=virtio,cache=unsafe" \
			-virtfs "local,path=$share,mount_tag=share,security_model=none,id=share" \
			-device virtio-rng-pci </dev/null >"$res/console.log" 2>&1 ||
			echo "$box: qemu ended with status $? after $(($(date +%s) - start)) s (console: $res/console.log)"
		echo "$box: the VM ran $(($(date +%s) - start)) s"
		if [ "$attempt" = 1 ] && [ -z "$(ls -A "$share/results")" ] && grep -q 'Kernel panic' "$res/console.log"; then
			echo "$box: the guest kernel panicked before the job ran; booting it again"
			cp "$res/console.log" "$res/console.panic.log"
			rm -rf "$share" "$disk"
			continue
		fi
		break
	done
	cp -a "$share/results/." "$res/" 2>/dev/null || true
	rm -rf "$share" "$disk"
	check "$box" || status=1
done
echo
cat "$here/results/matrix.md"
exit $status
