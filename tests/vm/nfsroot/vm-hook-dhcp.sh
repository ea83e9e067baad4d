#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side VM hook of tests/cases/nfsroot-dhcp.sh: the one of nfsroot.sh,
# with the client's address and root path from DHCP (see vm-hook.sh).
NFSROOT_DHCP=1 exec "$(dirname "$0")/vm-hook.sh" "$@"
