#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# An interactive shell in the test VM, for poking at a problem by hand:
#
#   tests/vm/shell.sh [IPOIB_DRIVER]      (ours|stock, default ours)
#
# The console is this terminal (exit the shell or `poweroff -f` to stop; ^A x
# quits QEMU). /tests/lib.sh is sourced by nothing: `. /tests/lib.sh` first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/kernel.sh"
ALLOW_MISSING=1 "$HERE/build.sh" >/dev/null
initrd=$(mktemp "$BUILD/shell-initrd.XXXXXX")
trap 'rm -f "$initrd"' EXIT
"$HERE/mkinitramfs.sh" "$initrd"
qemu-system-x86_64 -accel tcg -M pc -cpu max -m "$VM_MEM" -smp 2 \
	-nodefaults -display none -no-reboot \
	-kernel "$VMLINUZ" -initrd "$initrd" \
	-append "console=ttyS0,115200 loglevel=5 panic=-1 no_timer_check mitigations=off rdinit=/init MODE=shell CASE_NAME=shell IPOIB_DRIVER=${1:-ours} VM_ID=0 VM_COUNT=1 TEST_NONCE=shell" \
	-serial mon:stdio -serial null
