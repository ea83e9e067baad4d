#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock/ours ours/ours
# vms: 2
# timeout: 240
# vm-hook: tests/vm/nfsroot/vm-hook-dhcp.sh
#
# The diskless boot of nfsroot.sh, with DHCP: the client's kernel command
# line says only ip=::::node1:ib0:dhcp. Its initramfs runs NetworkManager's DHCP
# client (with D-Bus and udevd, as dracut's network-manager module does)
# through the head node's port flap; dnsmasq on the head node leases the
# one address the export allows, by the client identifier (RFC 4390: the
# 20-byte address does not fit chaddr), with the root path (option 17).
# The hook takes address, prefix, server and root path from the lease,
# stops the DHCP client (the address stays) and mounts, as with ip=.
# The stock driver is the DHCP client once, ours serving (stock/ours).
. /tests/cases/nfsroot.sh
