#!/usr/bin/env bash
# Finishes a matrix image's root file system (mmdebstrap's customize hook
# runs it on the host with the root folder as $1): names the host, lets it
# mount its disk and the 9p share, adds the ordinary user `corral` (uid
# 1000) with lingering on, so systemd starts their user manager at boot as
# it does for a logged-in user, and installs the unit that runs the job
# from the share and powers the VM off.
set -euo pipefail
root=${1:?usage: guest-setup.sh ROOT}

echo corral-vm >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tcorral-vm\n' >"$root/etc/hosts"
printf '/dev/vda\t/\text4\trw,errors=remount-ro\t0\t1\n' >"$root/etc/fstab"
chroot "$root" passwd -d root >/dev/null
chroot "$root" useradd -m -u 1000 -s /bin/bash corral
mkdir -p "$root/var/lib/systemd/linger"
touch "$root/var/lib/systemd/linger/corral"

# Timers and units that only cost boot time in a VM that lives minutes.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer man-db.timer \
	dpkg-db-backup.timer systemd-tmpfiles-clean.timer getty@tty1.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done

cat >"$root/usr/local/sbin/corral-job" <<'JOB'
#!/bin/bash
# Mounts the share, runs its job.sh as root and powers the VM off, what
# ever the job did.
trap 'sync; systemctl --no-block poweroff' EXIT
modprobe -a 9pnet_virtio 9p 2>/dev/null
mkdir -p /share
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 share /share || { echo "corral-job: no share"; exit 1; }
cd /share && bash ./job.sh >/share/results/job.log 2>&1
echo "corral-job: job.sh ended with status $?"
JOB
chmod 0755 "$root/usr/local/sbin/corral-job"
cat >"$root/etc/systemd/system/corral-job.service" <<'UNIT'
[Unit]
Description=corral matrix job
After=multi-user.target systemd-logind.service user@1000.service
Wants=systemd-logind.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/corral-job
TimeoutStartSec=infinity
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/corral-job.service "$root/etc/systemd/system/multi-user.target.wants/corral-job.service"
