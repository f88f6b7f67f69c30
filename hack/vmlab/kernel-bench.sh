#!/usr/bin/env bash
# Usage: kernel-bench.sh TRADDR TRSVCID SUBNQN HOSTNQN RUNTIME SIZE
# Benchmarks an NVMe/TCP target of this machine through the kernel's
# NVMe-oF host, the path a Pod's volume takes: it boots the VM lab's
# guest (Debian's 6.1 kernel, TCG, one vCPU) with flint-bench and fio,
# connects to the target through a forward of the guest's 10.0.2.100:4420
# to TRADDR:TRSVCID (socat, with TCP_NODELAY as NVMe/TCP hosts set it;
# QEMU reads ",," as a comma; user-mode networking, restrict=on: nothing
# else leaves the guest), and runs flint-bench's jobs for RUNTIME each within
# the first SIZE of the namespace. Prints flint-bench's JSON report on the
# line after KBENCH-REPORT. QEMU runs on the cores of $KBENCH_CPUS
# (taskset; default all). Needs qemu-system-x86, busybox-static, kmod,
# cpio, fio and socat.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# = 6 ] || { echo "usage: $0 TRADDR TRSVCID SUBNQN HOSTNQN RUNTIME SIZE" >&2; exit 2; }
traddr=$1 trsvcid=$2 subnqn=$3 hostnqn=$4 runtime=$5 size=$6
for bin in qemu-system-x86_64 busybox depmod cpio fio socat; do
  command -v "$bin" >/dev/null || { echo "kernel-bench: $bin missing: apt-get install --no-install-recommends qemu-system-x86 busybox-static kmod cpio fio socat" >&2; exit 2; }
done
work="$(mktemp -d /tmp/flint-kbench.XXXXXX)"
trap 'rm -rf "$work"' EXIT

kernel=$(hack/vmlab/kernel.sh)
kroot=$(sed -n 1p <<<"$kernel"); kver=$(sed -n 2p <<<"$kernel")
CGO_ENABLED=0 go build -o "$work/flint-bench" ./cmd/flint-bench
root="$work/root"
. hack/vmlab/initramfs.sh
initramfs_root "$root"
initramfs_bins "$root" fio
hack/vmlab/modules.sh "$kroot" "$kver" "$root" nvme-core nvme-fabrics nvme-tcp virtio_pci virtio_net crc32c_generic crc32c-intel
cp "$work/flint-bench" "$root/flint-bench"
cat > "$root/init" <<INIT
#!/bin/sh
export PATH=/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp; mount -t tmpfs run /run
for m in virtio_pci virtio_net nvme-tcp; do modprobe \$m || echo "modprobe \$m failed"; done
ip link set lo up; ip link set eth0 up; ip addr add 10.0.2.15/24 dev eth0
echo "transport=tcp,traddr=10.0.2.100,trsvcid=4420,nqn=$subnqn,hostnqn=$hostnqn" > /dev/nvme-fabrics || { echo "KBENCH-EXIT=connect"; poweroff -f; }
for i in \$(seq 100); do [ -b /dev/nvme0n1 ] && break; sleep 0.1; done
/flint-bench --target /dev/nvme0n1 --size $size --runtime $runtime --fio /sbin/fio --report-file /tmp/report.json >/dev/null 2>&1; rc=\$?
echo KBENCH-REPORT; cat /tmp/report.json; echo
echo "KBENCH-EXIT=\$rc"
poweroff -f
INIT
chmod +x "$root/init"
initramfs_pack "$root" "$work/initramfs.gz"

console="$work/console.log"
taskset -c "${KBENCH_CPUS:-0-$(($(nproc) - 1))}" timeout 900 qemu-system-x86_64 -accel tcg -cpu max -smp 1 -m 1024 -nographic -no-reboot \
  -kernel "$kroot/boot/vmlinuz-$kver" -initrd "$work/initramfs.gz" \
  -append "console=ttyS0 loglevel=3 panic=-1" \
  -netdev "user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:4420-cmd:socat - TCP:$traddr:$trsvcid,,nodelay" \
  -device virtio-net-pci,netdev=n0 </dev/null > "$console" || true
# The console interleaves the firmware's escape codes with the guest's
# lines: the markers are matched anywhere in a line.
if ! grep -q 'KBENCH-EXIT=0' "$console"; then
  echo "kernel-bench: the guest's run failed:" >&2
  tail -n 30 "$console" >&2
  exit 1
fi
sed -n '/KBENCH-REPORT/,/KBENCH-EXIT/p' "$console" | tr -d '\r' | sed 's/.*KBENCH-REPORT/KBENCH-REPORT/'
