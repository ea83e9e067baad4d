#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make install: put our ib_ipoib.ko into /lib/modules/<kver>/updates/ (which
# depmod ranks above the in-tree kernel/ directory, so `modprobe ib_ipoib`
# loads ours) and run depmod. softib is a test tool and is not installed.
# make uninstall (--uninstall): take it out again and run depmod, so that
# ib_ipoib resolves to the in-tree module. INSTALL_MOD_PATH= works under
# another root (packaging). tests/dkms.sh runs both in a throw-away root.
set -euo pipefail
. "$(dirname "$0")/kernel.sh"
dst=${INSTALL_MOD_PATH:-}/lib/modules/$KVER/updates
if [ "${1:-}" = --uninstall ]; then
	if [ ! -e "$dst/ib_ipoib.ko" ]; then
		echo "uninstall: $dst/ib_ipoib.ko is not there (nothing to do)"
		exit 0
	fi
	rm -f "$dst/ib_ipoib.ko"
	rmdir "$dst" 2>/dev/null || true
	depmod ${INSTALL_MOD_PATH:+-b "$INSTALL_MOD_PATH"} "$KVER"
	echo "removed $dst/ib_ipoib.ko; modprobe ib_ipoib now resolves to:"
	modinfo ${INSTALL_MOD_PATH:+-b "$INSTALL_MOD_PATH"} -k "$KVER" -F filename ib_ipoib || true
	exit 0
fi
"$(dirname "$0")/build.sh"
ko=$KBUILD_DIR/ipoib/ib_ipoib.ko
install -D -m 0644 "$ko" "$dst/ib_ipoib.ko"
strip --strip-debug "$dst/ib_ipoib.ko"
depmod ${INSTALL_MOD_PATH:+-b "$INSTALL_MOD_PATH"} "$KVER"
echo "installed $dst/ib_ipoib.ko; modprobe ib_ipoib now resolves to:"
modinfo ${INSTALL_MOD_PATH:+-b "$INSTALL_MOD_PATH"} -k "$KVER" -F filename ib_ipoib
