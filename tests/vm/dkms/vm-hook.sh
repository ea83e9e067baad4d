#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side VM hook of tests/cases/dkms.sh (see tests/vm/vmhook.sh):
#
#   tests/vm/dkms/vm-hook.sh VM_ID DIR
#
# The module trees tests/dkms.sh left in build/dkms-test/guest/$KVER/ (the
# updates/ directory of each state of its throw-away root: after dpkg -i
# and the kernel hook, the upgrade, dpkg -r, make install, make uninstall;
# and the kernel's in-tree ib_ipoib) go to /dkms/ in the guest, outside
# /lib/modules so that the initramfs' own depmod does not see them. Without
# them for this kernel (make test CASES=dkms, no dkms stage before),
# tests/dkms.sh runs first; if it cannot make them (no root, no overlay, no
# headers for this kernel), /dkms/none says why and the case skips.
# Env (from tests/vm/kernel.sh): REPO BUILD KVER.
set -euo pipefail

G=$BUILD/dkms-test/guest
mkdir -p "$2/root/dkms"
# make check runs the dkms stage beside the suite: wait for it to end
if [ -n "${DKMS_STAGE_RC:-}" ]; then
	n=0
	while [ ! -e "$DKMS_STAGE_RC" ] && [ $n -lt 1200 ]; do
		sleep 1
		n=$((n + 1))
	done
	[ -e "$DKMS_STAGE_RC" ] || echo "vm-hook: the dkms stage did not end within 1200 s" >&2
fi
if [ ! -d "$G/$KVER/installed" ] && [ ! -e "$G/none" ]; then
	KVER=$KVER bash "$REPO/tests/dkms.sh" >&2 || true
fi
if [ -e "$G/none" ]; then	# the stage could not run here: say why
	cp "$G/none" "$2/root/dkms/none"
	exit 0
fi
if [ ! -d "$G/$KVER/installed" ]; then
	# e.g. the debug kernel (make check-debug): no headers for DKMS
	echo "tests/dkms.sh made no module trees for $KVER (no kernel headers?)" |
		tee "$2/root/dkms/none"
	exit 0
fi
cp -a "$G/$KVER/." "$2/root/dkms/"
echo "$KVER" >"$2/root/dkms/kver"
find "$2/root/dkms" -type f | sed 's/^/vm-hook: /'
