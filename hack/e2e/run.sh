#!/usr/bin/env bash
# The e2e lab (make test-e2e): a cluster of real Kubernetes components on
# this machine, in a network namespace made here and removed on exit, with
# Flint installed by its chart from images built here (nothing is pulled).
# docs/development.md draws it. Without SPDK_SRC and DPDK_SRC there is no
# OSD image, without CSI_REGISTRAR_SRC and CSI_LIVENESSPROBE_SRC no image
# of those two sidecars (the Go module proxy has no module of them): the
# tests that need them say so and skip. make test-e2e gives the archives
# of ../shared/sources when it holds them.
#
# E2E_KEEP=1 keeps the lab's directory (configuration and logs/) on exit.
# E2E_STORM_FAULTS (default 10) and E2E_STORM_SEED (default: new) size and
# replay the kernel host's storm (TestAKernelHostWritesThroughAStorm).
set -euo pipefail
cd "$(dirname "$0")/../.."

PACKAGES=(containerd runc containernetworking-plugins iptables mmdebstrap qemu-system-x86 busybox-static kmod cpio e2fsprogs)
for bin in containerd ctr runc /usr/lib/cni/bridge iptables mmdebstrap qemu-system-x86_64 busybox depmod cpio mke2fs; do
  command -v "$bin" >/dev/null || [ -x "$bin" ] || { echo "e2e: $bin missing: apt-get install --no-install-recommends ${PACKAGES[*]}" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "e2e: the lab runs a kubelet and containerd: run as root" >&2; exit 2; }
# One lab at a time: they share /var/lib/kubelet.
exec 9>/run/flint-e2e.lock
flock -n 9 || { echo "e2e: another e2e lab runs here (it holds /run/flint-e2e.lock)" >&2; exit 2; }
[ ! -e /var/lib/kubelet ] || [ -f /var/lib/kubelet/.flint-e2e ] || { echo "e2e: /var/lib/kubelet exists and is not the lab's: another kubelet runs here" >&2; exit 2; }

start=$SECONDS
log() { printf '[e2e %4ds] %s\n' "$((SECONDS - start))" "$*"; }
version="e2e-$(git rev-parse --short HEAD)"
work="$(mktemp -d /tmp/flint-e2e.XXXXXX)"
ns="flint-e2e-$$"
netns_before="$(ip netns list | awk '{print $1}' | sort)"

cleanup() {
  local rc=$?
  # Processes the test left (it stops the lab itself unless killed).
  if ip netns pids "$ns" >/dev/null 2>&1; then
    ip netns pids "$ns" | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" || true
  fi
  # Pods' network namespaces that containerd made during the run, with
  # whatever still runs in them.
  for pod_ns in $(comm -13 <(echo "$netns_before") <(ip netns list | awk '{print $1}' | sort) | grep '^cni-'); do
    ip netns pids "$pod_ns" | xargs -r kill -9 2>/dev/null || true
    ip netns del "$pod_ns" 2>/dev/null || true
  done
  for dir in /var/lib/kubelet "$work"; do
    awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  done
  rm -rf /var/lib/kubelet
  # The second storage node's cgroups, one per cgroup v1 hierarchy.
  find /sys/fs/cgroup/*/flint-storage-1 -depth -type d -exec rmdir {} + 2>/dev/null || true
  # host-local's address leases of the lab's pod and storage networks.
  rm -rf /var/lib/cni/networks/flint-lab /var/lib/cni/networks/flint-lab-storage
  # The kubelet's links to the pods' logs, which live in the lab's directory.
  find /var/log/containers -maxdepth 1 -lname "$work/*" -delete 2>/dev/null || true
  if [ "${E2E_KEEP:-}" = 1 ] || [ $rc -ne 0 ]; then log "lab directory kept: $work (logs/)"; else rm -rf "$work"; fi
  log "done (exit $rc)"
}
trap cleanup EXIT
mkdir -p /var/lib/kubelet && touch /var/lib/kubelet/.flint-e2e

# Kubernetes' storage e2e suite needs volumes, so the OSD and sidecar
# images: with their sources, e2e.test and agnhost are built too.
# E2E_SUITE picks the suite's focus: ci (two specs, the default), full
# (about an hour on the emulated node) or 0 (left out).
suite_set="${E2E_SUITE:-ci}"
[ "$suite_set" != 1 ] || suite_set=ci
case "$suite_set" in ci|full|0) ;; *) echo "e2e: E2E_SUITE=$suite_set: want ci, full or 0" >&2; exit 2 ;; esac
suite=()
if [ -n "${SPDK_SRC:-}" ] && [ -n "${DPDK_SRC:-}" ] && [ -n "${CSI_REGISTRAR_SRC:-}" ] && [ -n "${CSI_LIVENESSPROBE_SRC:-}" ] && [ "$suite_set" != 0 ]; then
  suite=(e2e.test agnhost)
fi
timeout=60m
[ "$suite_set" != full ] || timeout=150m
log "Kubernetes $(hack/envtest-assets.sh kubelet kube-scheduler kube-proxy "${suite[@]}" >"$work/assets" && basename "$(cat "$work/assets")") binaries (built from Go modules; cached)"
phase=$SECONDS
go run ./hack/images -lab -out "$work/images" -version "$version" \
  -spdk-src "${SPDK_SRC:-}" -dpdk-src "${DPDK_SRC:-}" \
  -registrar-src "${CSI_REGISTRAR_SRC:-}" -livenessprobe-src "${CSI_LIVENESSPROBE_SRC:-}" \
  ${suite:+-suite-assets "$(cat "$work/assets")"} | sed 's/^/  /'
log "images built in $((SECONDS - phase))s"
phase=$SECONDS
# The workload node: bookworm-backports' kernel (6.12: its NVMe host
# authenticates, which Debian's 6.1 cannot), an initramfs that mounts the
# root disk and hands over, and a Debian root (cached) with containerd.
kernel=$(hack/vmlab/kernel.sh backports)
kroot=$(sed -n 1p <<<"$kernel"); kver=$(sed -n 2p <<<"$kernel")
worker_packages="containerd,runc,containernetworking-plugins,iptables,kmod,iproute2,util-linux,e2fsprogs,xfsprogs,mount,procps"
cache="${FLINT_CACHE:-$HOME/.cache/flint}/e2e"
worker_base="$cache/worker-$(sha256sum <<<"$worker_packages" | cut -c1-16).tar"
if [ ! -f "$worker_base" ]; then
  log "making the workload node's Debian root (mmdebstrap)"
  mkdir -p "$cache"
  mmdebstrap --quiet --variant=essential --include="$worker_packages" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    bookworm "$worker_base.partial.tar"
  mv "$worker_base.partial.tar" "$worker_base"
fi
initrd="$work/worker-initrd"
mkdir -p "$initrd"/{bin,proc,sys,dev,newroot}
cp "$(command -v busybox)" "$initrd/bin/busybox"
for applet in sh mount umount modprobe mkdir sleep switch_root poweroff; do ln -s busybox "$initrd/bin/$applet"; done
hack/vmlab/modules.sh "$kroot" "$kver" "$initrd" virtio_pci virtio_blk crc32c_generic ext4
cat > "$initrd/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_pci virtio_blk crc32c_generic ext4; do modprobe $m; done
i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
mount -t ext4 /dev/vda /newroot || { echo "FLINT-WORKER no root disk"; poweroff -f; }
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/flint-worker-init
INIT
chmod +x "$initrd/init"
(cd "$initrd" && find . | cpio -o -H newc --quiet | gzip -1 > "$work/worker-initrd.gz")

mkdir -p "$work/bin"
go build -modfile=hack/tools/helm/go.mod -o "$work/bin/helm" helm.sh/helm/v4/cmd/helm
# Multus, the thin plugin, from its Go module; its module also has the
# NetworkAttachmentDefinition CRD, in its deployment manifest.
multus_pkg=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
CGO_ENABLED=0 go build -modfile=hack/tools/multus/go.mod -trimpath -ldflags='-s -w' -o "$work/bin/multus" "$multus_pkg/cmd/multus"
multus_crds="$(go list -modfile=hack/tools/multus/go.mod -m -f '{{.Dir}}' "$multus_pkg")/deployments/multus-daemonset.yml"
go test -c -o "$work/bin/e2e.test" ./test/e2e
log "helm, Multus and the e2e test built in $((SECONDS - phase))s"

# The lab's network: a bridge holding the storage node's address, in a
# namespace of its own; every process of the cluster runs in it.
ip netns add "$ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add flint-lab type bridge
ip -n "$ns" addr add 10.77.0.1/24 dev flint-lab
ip -n "$ns" link set flint-lab up
# A default route, into the bridge: a connection to a Service address is
# routed before kube-proxy's DNAT rewrites it, and without one it fails
# with "network is unreachable". Nothing leaves the namespace.
ip -n "$ns" route add default dev flint-lab
ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1

# nsenter, not ip netns exec: that also makes a mount namespace with a
# new /sys, where the kubelet finds no cgroup hierarchy.
log "running the e2e tests in network namespace $ns"
# In the package's directory, as go test runs it: its testdata is there.
repo=$PWD
cd test/e2e
nsenter --net="/run/netns/$ns" env FLINT_E2E_DIR="$work" FLINT_E2E_ASSETS="$(cat "$work/assets")" \
  FLINT_E2E_WORKER_KERNEL="$kroot/boot/vmlinuz-$kver" FLINT_E2E_WORKER_INITRD="$work/worker-initrd.gz" \
  FLINT_E2E_WORKER_MODULES="$kroot/lib/modules/$kver" FLINT_E2E_WORKER_BASE="$worker_base" \
  FLINT_E2E_IMAGES="$work/images" FLINT_E2E_VERSION="$version" FLINT_E2E_HELM="$work/bin/helm" FLINT_E2E_CHART="$repo/charts/flint" \
  FLINT_E2E_SUITE="$suite_set" FLINT_E2E_SUITE_FOCUS="${E2E_SUITE_FOCUS:-}" FLINT_E2E_STORM_FAULTS="${E2E_STORM_FAULTS:-}" FLINT_E2E_STORM_SEED="${E2E_STORM_SEED:-}" FLINT_E2E_MULTUS="$work/bin/multus" FLINT_E2E_MULTUS_CRDS="$multus_crds" \
  "$work/bin/e2e.test" -test.v -test.timeout="${E2E_TIMEOUT:-$timeout}" ${E2E_ARGS:-}
