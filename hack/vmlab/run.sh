#!/usr/bin/env bash
# The VM node lab (make test-vm): boots Debian's 6.1 kernel in QEMU (TCG)
# with a busybox initramfs holding the kernel's NVMe-oF host and target
# modules, soft-RoCE, mkfs/resize tools and the static guest test binary
# (test/vmlab/guest), which drives the CSI node service against a kernel
# nvmet target inside the guest. Guest networking is user-mode with
# restrict=on: nothing leaves the guest.
#
# With FLINT_SPDK_DIR (make test-vm gives make spdk's build) the guest is
# also a production storage node: q35 + intel-iommu, an emulated NVMe
# controller (QEMU models its volatile write cache), 2 MiB hugepages
# reserved on the kernel command line, and SPDK's nvmf_tgt with osd-agent
# (exec-spdk and the OSD's storage code) in the initramfs: the guest test
# drives the controller over vfio on hugepages, exports over RDMA
# (soft-RoCE) to the kernel's nvme-rdma host, and breaks each preflight
# check exec-spdk makes (test/vmlab/guest/spdk_test.go).
#
# VMLAB_KERNEL=backports boots bookworm-backports' kernel (6.12) instead,
# and VMLAB_AUTH=1 has the production data-path test's host also
# authenticate (DH-HMAC-CHAP, test/vmlab/guest/auth_test.go), which
# Debian's 6.1 is built without; VMLAB_RUN limits the guest's tests (a
# -test.run pattern). make test-vm boots both: everything on 6.1, the
# production data path with authentication on 6.12.
#
# Needs the Debian packages listed in PACKAGES; the kernel package is
# downloaded (apt-get download) into $FLINT_CACHE/vmlab once.
#
# VMLAB_REPEAT=N runs the failover tests (path follow, re-created target)
# N times in a row after the whole suite ran once: a timing fault there
# is a defect, and one pass proves little.
set -euo pipefail
cd "$(dirname "$0")/../.."

repeat="${VMLAB_REPEAT:-1}"
kernel_series="${VMLAB_KERNEL:-stable}"
run="${VMLAB_RUN:-.}"
auth="${VMLAB_AUTH:-}"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "vmlab: VMLAB_REPEAT must be a positive count, not '$repeat'" >&2; exit 2; }
PACKAGES=(qemu-system-x86 busybox-static kmod cpio e2fsprogs xfsprogs iproute2 util-linux ibverbs-providers openssl)
spdk_dir="${FLINT_SPDK_DIR:-}"
work="$(mktemp -d /tmp/flint-vmlab.XXXXXX)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
log() { printf '[vmlab %3ds] %s\n' "$((SECONDS - start))" "$*"; }

for bin in qemu-system-x86_64 busybox depmod cpio mke2fs mkfs.xfs rdma setpriv unshare taskset; do
  command -v "$bin" >/dev/null || { echo "vmlab: $bin missing: apt-get install --no-install-recommends ${PACKAGES[*]}" >&2; exit 2; }
done
rxe_provider=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
if [ -n "$spdk_dir" ]; then
  [ -x "$spdk_dir/build/bin/nvmf_tgt" ] || { echo "vmlab: FLINT_SPDK_DIR=$spdk_dir has no build/bin/nvmf_tgt (make spdk)" >&2; exit 2; }
  [ -f "$rxe_provider" ] || { echo "vmlab: $rxe_provider missing: apt-get install --no-install-recommends ibverbs-providers" >&2; exit 2; }
  [ -f /etc/ssl/openssl.cnf ] || { echo "vmlab: /etc/ssl/openssl.cnf missing (SPDK reads it at start): apt-get install --no-install-recommends openssl" >&2; exit 2; }
fi

# The kernel: the one Debian's (or bookworm-backports') linux-image-amd64
# depends on.
kernel=$(hack/vmlab/kernel.sh "$kernel_series")
kroot=$(sed -n 1p <<<"$kernel"); kver=$(sed -n 2p <<<"$kernel")
log "kernel $kver"

log "building the guest test binary"
CGO_ENABLED=0 go test -c -o "$work/guest.test" ./test/vmlab/guest
[ -z "$spdk_dir" ] || CGO_ENABLED=0 go build -o "$work/osd-agent" ./cmd/osd-agent

root="$work/root"
. hack/vmlab/initramfs.sh
initramfs_root "$root"
# Dynamic tools the node service runs (mount-utils calls blkid, fsck,
# mkfs.*, resize2fs, xfs_growfs, mount and umount) with their libraries.
initramfs_bins "$root" blkid mount umount losetup fsck e2fsck fsck.ext4 mke2fs mkfs.ext4 resize2fs mkfs.xfs xfs_growfs xfs_repair fsck.xfs rdma modprobe
spdk_modules=() spdk_boot_modules=() spdk_env="" spdk_qemu=() spdk_append=""
if [ -n "$spdk_dir" ]; then
  # SPDK and what its container gets: the agent, util-linux's unshare,
  # setpriv and taskset for the preflight breaks, soft-RoCE's user-space
  # provider, OpenSSL's configuration (SPDK fails to start without it), a
  # hugetlbfs and the directories SPDK locks and maps in.
  # (The provider links only what nvmf_tgt links.)
  initramfs_bins "$root" "$spdk_dir/build/bin/nvmf_tgt" setpriv unshare taskset
  mkdir -p "$root$(dirname "$rxe_provider")" "$root/etc/libibverbs.d" "$root/var/tmp" "$root/var/run"
  cp "$rxe_provider" "$root$rxe_provider"
  cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
  mkdir -p "$root/usr/lib/ssl" && cp /etc/ssl/openssl.cnf "$root/usr/lib/ssl/"
  install -m 0755 "$work/osd-agent" "$root/sbin/osd-agent"
  # nvme is there for the test to bind the controller to, not loaded at boot.
  spdk_modules=(nvme vfio-pci vfio_iommu_type1) spdk_boot_modules=(vfio-pci vfio_iommu_type1)
  spdk_env="FLINT_VM_SPDK=1"
  truncate -s 1G "$work/nvme.img"
  # aw-bits=48: SPDK maps DMA at its virtual addresses (0x200000000000
  # up), beyond the 39 bits QEMU's IOMMU gives by default (EAL: "Cannot set
  # up DMA remapping, error 22"). The namespace has 4096-byte blocks, as
  # an OSD's device must (QEMU's default is 512).
  spdk_qemu=(-machine q35 -device intel-iommu,intremap=on,aw-bits=48
    -drive "file=$work/nvme.img,if=none,id=nvm,format=raw" -device nvme,serial=flintvm0,drive=nvm,logical_block_size=4096,physical_block_size=4096)
  spdk_append="intel_iommu=on iommu=pt hugepagesz=2M hugepages=320"
fi

# Modules: the closure of what the lab loads.
hack/vmlab/modules.sh "$kroot" "$kver" "$root" nvme-core nvme-fabrics nvme-tcp nvme-rdma nvmet nvmet-tcp nvmet-rdma \
  rdma_rxe rdma_cm rdma_ucm ib_uverbs configfs virtio_pci virtio_net ext4 xfs loop crc32c_generic crc32c-intel crc32_generic crc32-pclmul \
  "${spdk_modules[@]}"

cp "$work/guest.test" "$root/guest.test"
cat > "$root/init" <<INIT
#!/bin/sh
export PATH=/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp; mount -t tmpfs run /run
for m in configfs virtio_pci virtio_net loop ext4 xfs nvme-tcp nvme-rdma nvmet-tcp nvmet-rdma rdma_rxe rdma_ucm ib_uverbs ${spdk_boot_modules[*]}; do modprobe \$m || echo "modprobe \$m failed"; done
mount -t configfs none /sys/kernel/config
mkdir -p /dev/hugepages /dev/shm && mount -t hugetlbfs nodev /dev/hugepages && mount -t tmpfs shm /dev/shm
ip link set lo up; ip link set eth0 up; ip addr add 10.0.2.15/24 dev eth0
rdma link add rxe0 type rxe netdev eth0 || echo "soft-RoCE failed"
ip -4 addr show eth0 | grep inet
echo "VMLAB-BOOTED \$(cut -d' ' -f1 /proc/uptime)s"
export FLINT_VM_GUEST=1 FLINT_VM_ADDRESS=10.0.2.15 $spdk_env ${auth:+FLINT_VM_AUTH=1}
/guest.test -test.v -test.timeout 420s -test.run '$run'; rc=\$?
if [ \$rc = 0 ] && [ $repeat -gt 1 ]; then
  echo "VMLAB-REPEAT the failover tests $((repeat - 1)) more times"
  /guest.test -test.v -test.run 'TestPathFollow|TestTargetRecreated' -test.count $((repeat - 1)) -test.failfast -test.timeout $((60 * repeat))s; rc=\$?
fi
echo "VMLAB-EXIT=\$rc"
poweroff -f
INIT
chmod +x "$root/init"
initramfs_pack "$root" "$work/initramfs.gz"
log "initramfs $(du -h "$work/initramfs.gz" | cut -f1)"

log "booting (TCG)"
console="$work/console.log"
# One TCG thread for both vCPUs: with a thread per vCPU, QEMU 7.2 let a
# vCPU run a kernel text patch's temporary int3 after the patch was done
# ("Oops: int3" at boot, in sched_clock_cpu, failed a CI run).
timeout $((500 + 60 * (repeat - 1))) qemu-system-x86_64 -accel tcg,thread=single -cpu max -smp 2 -m 3072 -nographic -no-reboot \
  "${spdk_qemu[@]}" -kernel "$kroot/boot/vmlinuz-$kver" -initrd "$work/initramfs.gz" \
  -append "console=ttyS0 loglevel=5 panic=-1 nvme_core.multipath=Y $spdk_append" \
  -netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0 </dev/null | tee "$console" | sed -n '/VMLAB-BOOTED/,$p' || true
log "guest done"
for test in TestPathFollow TestTargetRecreated TestPreflightOnTheNode TestProductionDataPath; do
  log "$test: $(grep -c -- "--- PASS: $test " "$console") passed, $(grep -c -- "--- FAIL: $test " "$console") failed"
done
if ! grep -q '^VMLAB-EXIT=0' "$console"; then
  grep -q VMLAB-BOOTED "$console" || tail -40 "$console"
  echo "vmlab: FAILED (console above)" >&2
  exit 1
fi
if [ -n "$auth" ] && ! grep -q 'DH-HMAC-CHAP: no key and wrong keys refused' "$console"; then
  echo "vmlab: VMLAB_AUTH=1, and the guest never showed its host authenticate" >&2
  exit 1
fi
log "PASS"
