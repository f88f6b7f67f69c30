#!/usr/bin/env bash
# Prints the directory holding a Debian kernel (boot/vmlinuz-<kver>,
# lib/modules/<kver>, depmod'ed) and, on a second line, <kver>; the
# kernel is downloaded with apt-get download and unpacked into
# $FLINT_CACHE/vmlab once.
#
#   kernel.sh            bookworm's 6.1, the one linux-image-amd64 depends
#                        on: the e2e lab's workload node boots it.
#   kernel.sh backports  bookworm-backports' (6.12), from a source list
#                        of its own (the machine's apt configuration is
#                        left alone): the VM node lab boots it, for NVMe
#                        in-band authentication (CONFIG_NVME_HOST_AUTH),
#                        which Debian's 6.1 builds without.
set -euo pipefail

cache="${FLINT_CACHE:-$HOME/.cache/flint}/vmlab"
series="${1:-stable}"
apt_opts=()
case "$series" in
  stable) want='linux-image-6\.1' ;;
  backports)
    want='linux-image-6\.'
    apt_dir="$cache/apt-backports"
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main" >"$apt_dir/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
    ;;
  *) echo "kernel: unknown series '$series' (stable or backports)" >&2; exit 2 ;;
esac
kernel_package() { apt-cache "${apt_opts[@]}" depends linux-image-amd64 2>/dev/null | awk -v want="Depends: $want" '$0 ~ want {print $2; exit}'; }
kpkg=$(kernel_package || true)
if [ -z "$kpkg" ] && [ "$(id -u)" = 0 ]; then apt-get "${apt_opts[@]}" update -qq; kpkg=$(kernel_package || true); fi
[ -n "$kpkg" ] || { echo "kernel: apt-cache knows no $series kernel package: apt-get update (as root)" >&2; exit 2; }
kver=${kpkg#linux-image-}
kroot="$cache/$kver"
if [ ! -f "$kroot/done" ]; then
  echo "kernel: downloading and unpacking $kpkg" >&2
  mkdir -p "$cache" && rm -rf "$kroot"
  (cd "$cache" && apt-get "${apt_opts[@]}" download -q "$kpkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
  dpkg-deb -x "$cache/${kpkg}"_*.deb "$kroot"
  depmod -b "$kroot" "$kver"
  touch "$kroot/done"
fi
echo "$kroot"
echo "$kver"
