# Sourced by the VM lab's scripts: building a busybox initramfs root.

# initramfs_root ROOT: busybox and its applets in ROOT, with the
# directories a guest init mounts on.
initramfs_root() {
  local root=$1 applet
  mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,lib64,usr/lib/x86_64-linux-gnu,etc/nvme}
  cp "$(command -v busybox)" "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do
    [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
  done
  mkdir -p "$root/lib64" && cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
}

# initramfs_bins ROOT BIN...: each dynamic tool into ROOT/sbin (replacing
# a busybox applet of that name) with the libraries it links.
initramfs_bins() {
  local root=$1 b src lib
  shift
  for b in "$@"; do
    src=$(command -v "$b")
    rm -f "$root/bin/$b"
    cp -L "$src" "$root/sbin/$(basename "$src")"
    for lib in $(ldd "$src" | awk '/=>/ {print $3} /^\s*\/lib64/ {print $1}'); do
      [ -f "$lib" ] || continue
      mkdir -p "$root$(dirname "$lib")"
      cp -Ln "$lib" "$root$lib"
    done
  done
}

# initramfs_pack ROOT OUT: ROOT as a gzipped newc cpio at OUT.
initramfs_pack() {
  (cd "$1" && find . | cpio -o -H newc --quiet | gzip -1 > "$2")
}
