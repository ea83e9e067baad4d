#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock/stock
# vms: 2
# timeout: 180
#
# The two-VM mode itself: eth0 between the VMs (QEMU socket netdev on the
# host's loopback), the peer's IPv6 link-local address, and vm_barrier.
. /tests/lib.sh

check "eth0 is up with carrier" sh -c '/usr/sbin/ip -o link show dev eth0 | grep -q LOWER_UP'
check_wait "peer answers ping over eth0" 30 ping -c 1 -W 1 "$(peer_ll)"
check "barrier one" vm_barrier one 60
check "barrier two" vm_barrier two 60

# Ordering: VM0 listens, then barrier; VM1 sends a flag and completes the
# send before the next barrier; so VM0 must hold the flag as soon as it has
# passed that barrier, without waiting.
send_flag() { echo flag | nc -w 2 "$(peer_ll)" 7778; }
if [ "$VM_ID" = 0 ]; then
	nc -l -p 7778 >/run/flag &
fi
check "barrier listening" vm_barrier listening 60
if [ "$VM_ID" = 1 ]; then
	check_wait "flag sent to VM0" 20 send_flag
fi
check "barrier flag-sent" vm_barrier flag-sent 60
if [ "$VM_ID" = 0 ]; then
	check "VM1's flag arrived before the barrier released VM0" grep -qx flag /run/flag
fi
check "barrier last" vm_barrier last 60
