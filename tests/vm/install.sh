#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make install: put our ib_ipoib.ko into /lib/modules/<kver>/updates/ (which
# depmod ranks above the in-tree kernel/ directory, so `modprobe ib_ipoib`
# loads ours) and run depmod. softib is a test tool and is not installed.
# INSTALL_MOD_PATH= installs under another root (packaging).
set -euo pipefail
. "$(dirname "$0")/kernel.sh"
"$(dirname "$0")/build.sh"
ko=$KBUILD_DIR/ipoib/ib_ipoib.ko
dst=${INSTALL_MOD_PATH:-}/lib/modules/$KVER/updates
install -D -m 0644 "$ko" "$dst/ib_ipoib.ko"
strip --strip-debug "$dst/ib_ipoib.ko"
depmod ${INSTALL_MOD_PATH:+-b "$INSTALL_MOD_PATH"} "$KVER"
echo "installed $dst/ib_ipoib.ko; modprobe ib_ipoib now resolves to:"
modinfo ${INSTALL_MOD_PATH:+-b "$INSTALL_MOD_PATH"} -k "$KVER" -F filename ib_ipoib
