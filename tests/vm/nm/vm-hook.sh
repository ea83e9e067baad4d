#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side VM hook of tests/cases/ipoib-nm.sh (see tests/vm/vmhook.sh):
#
#   tests/vm/nm/vm-hook.sh VM_ID DIR
#
# Debian's NetworkManager (with nmcli, a D-Bus system bus and udevd) and dnsmasq
# (the DHCP server), with their shared libraries, in one more initramfs
# layer: about 30 MB that the other boots need not unpack. The case writes
# their configuration itself.
# Env (from tests/vm/kernel.sh): REPO BUILD KVER.
set -euo pipefail

ROOT=$2/root
HERE=$(cd "$(dirname "$0")" && pwd)
BASE=$BUILD/$KVER/initramfs/base	# files already in the common initramfs

# shellcheck source=tests/vm/hooklib.sh
. "$HERE/../hooklib.sh"

copy_nm
# the boot hook's NetworkManager helpers (ipoib_nfsroot_nm_deps)
install -D -m 0755 "$HERE/../nfsroot/ipoib-nfsroot.sh" "$ROOT/tests/vm/nfsroot/ipoib-nfsroot.sh"
[ -x /usr/sbin/dnsmasq ] || { echo "vm-hook: dnsmasq is missing (make deps)" >&2; exit 1; }
copy_with_libs /usr/sbin/dnsmasq
# NetworkManager derives its DHCP and IPv6 identities from the machine ID
mkdir -p "$ROOT/etc"
printf '%032x\n' $((0x1b0d0000 + $1)) >"$ROOT/etc/machine-id"
