#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side VM hook of tests/cases/dkms.sh (see tests/vm/vmhook.sh):
#
#   tests/vm/dkms/vm-hook.sh VM_ID DIR
#
# The module trees tests/dkms.sh left in build/dkms-test/guest/ (the
# updates/ directory of each state of its throw-away root: after dpkg -i,
# the upgrade, dpkg -r, make install, make uninstall; and the kernel's
# in-tree ib_ipoib) go to /dkms/ in the guest, outside /lib/modules so that
# the initramfs' own depmod does not see them. Without them for this
# kernel (make test CASES=dkms, no dkms stage before), tests/dkms.sh runs
# first.
# Env (from tests/vm/kernel.sh): REPO BUILD KVER.
set -euo pipefail

G=$BUILD/dkms-test/guest
if [ "$(cat "$G/kver" 2>/dev/null)" != "$KVER" ]; then
	KVER=$KVER bash "$REPO/tests/dkms.sh" >&2 || true
fi
mkdir -p "$2/root/dkms"
if [ -e "$G/none" ]; then	# the stage could not run here: say why
	cp "$G/none" "$2/root/dkms/none"
	exit 0
fi
if [ "$(cat "$G/kver" 2>/dev/null)" != "$KVER" ]; then
	# e.g. the debug kernel (make check-debug): no headers for DKMS
	echo "tests/dkms.sh made no module trees for $KVER (no kernel headers?)" |
		tee "$2/root/dkms/none"
	exit 0
fi
cp -a "$G/." "$2/root/dkms/"
find "$2/root/dkms" -type f | sed 's/^/vm-hook: /'
