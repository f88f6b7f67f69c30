#!/usr/bin/env bash
# Prints the directory holding Debian's 6.1 kernel (boot/vmlinuz-<kver>,
# lib/modules/<kver>, depmod'ed) and, on a second line, <kver>: the one
# linux-image-amd64 currently depends on, downloaded with apt-get download
# and unpacked into $FLINT_CACHE/vmlab once. The VM node lab and the e2e
# lab's workload node boot it.
set -euo pipefail

cache="${FLINT_CACHE:-$HOME/.cache/flint}/vmlab"
kernel_package() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6\.1/ {print $2; exit}'; }
kpkg=$(kernel_package)
if [ -z "$kpkg" ] && [ "$(id -u)" = 0 ]; then apt-get update -qq; kpkg=$(kernel_package); fi
[ -n "$kpkg" ] || { echo "kernel: apt-cache knows no linux-image-6.1 package: apt-get update" >&2; exit 2; }
kver=${kpkg#linux-image-}
kroot="$cache/$kver"
if [ ! -f "$kroot/done" ]; then
  echo "kernel: downloading and unpacking $kpkg" >&2
  mkdir -p "$cache" && rm -rf "$kroot"
  (cd "$cache" && apt-get download -q "$kpkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
  dpkg-deb -x "$cache/${kpkg}"_*.deb "$kroot"
  depmod -b "$kroot" "$kver"
  touch "$kroot/done"
fi
echo "$kroot"
echo "$kver"
