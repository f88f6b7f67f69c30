#!/usr/bin/env bash
# Usage: modules.sh KROOT KVER DEST MODULE...
# Copies the named modules of the kernel unpacked in KROOT (kernel.sh),
# with every module they depend on, into the root DEST, and makes their
# modules.dep there, so that a guest's modprobe loads them by name. The VM
# node lab's and the e2e lab's initramfs use it.
set -euo pipefail
kroot=$1 kver=$2 dest=$3
shift 3
for m in "$@"; do
  modprobe -d "$kroot" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r ko; do
  rel=${ko#"$kroot"}
  mkdir -p "$dest$(dirname "$rel")"
  cp "$ko" "$dest$rel"
done
cp "$kroot/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$dest/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$dest" "$kver"
