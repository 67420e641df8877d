#!/bin/sh
# Capture this machine's sysfs and /proc subset as a dbrig doctor fixture,
# with the very collector dbrig runs over ssh (../collect.sh):
#
#   sh capture.sh NAME                     writes NAME.snap
#   sh capture.sh --misaligned-loop NAME   (root) first attaches a loop device
#       whose MBR has partition 1 at sector 63 (32,256 bytes, as Windows
#       Server 2003 made them) and partition 2 at sector 2048 (1 MiB),
#       captures, then detaches it.
#
# The fault fixtures (half duplex, small buffers, a physical host) are these
# captures with a few values edited by hand; README.md lists every edit.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
loop=
if [ "${1:-}" = --misaligned-loop ]; then
	loop=1
	shift
fi
name=${1:?usage: sh capture.sh [--misaligned-loop] NAME}

# le32 N: N as 4 little-endian bytes.
le32() {
	n=$1
	for _ in 1 2 3 4; do
		printf "\\$(printf '%03o' $((n % 256)))"
		n=$((n / 256))
	done
}

# mbr_entry START SIZE: a primary Linux (0x83) partition entry, LBA only.
mbr_entry() {
	printf '\000\000\000\000\203\000\000\000'
	le32 "$1"
	le32 "$2"
}

dev=
img=
cleanup() {
	if [ -n "$dev" ]; then losetup -d "$dev" 2>/dev/null || true; fi
	if [ -n "$img" ]; then rm -f "$img"; fi
}
trap cleanup EXIT

if [ -n "$loop" ]; then
	img=$(mktemp /tmp/dbrig-capture-XXXXXX.img)
	dd if=/dev/zero of="$img" bs=1M count=0 seek=16 2>/dev/null
	{ mbr_entry 63 1985; mbr_entry 2048 30720; } | dd of="$img" bs=1 seek=446 conv=notrunc 2>/dev/null
	printf '\125\252' | dd of="$img" bs=1 seek=510 conv=notrunc 2>/dev/null
	dev=$(losetup --find --show --partscan "$img")
	b=${dev##*/}
	# Kernels built without the MSDOS partition parser do not scan the MBR:
	# partx adds the partitions from user space (BLKPG), as the test does.
	[ -e "/sys/block/$b/${b}p1" ] || partx --add "$dev"
fi

sh "$here/../collect.sh" >"$here/$name.snap"
echo "wrote $here/$name.snap"
