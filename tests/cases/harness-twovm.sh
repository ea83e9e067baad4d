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
# an ordering proof: VM1 writes a flag before barrier three, VM0 sees the
# barrier only after that; then VM0 answers through barrier four.
if [ "$VM_ID" = 1 ]; then
	echo flag | nc -w 2 "$(peer_ll)" 7778 &
fi
if [ "$VM_ID" = 0 ]; then
	nc -l -p 7778 >/run/flag &
fi
check "barrier three" vm_barrier three 60
if [ "$VM_ID" = 0 ]; then
	check_wait "flag sent by VM1 before barrier three arrived" 10 grep -qx flag /run/flag
fi
check "barrier four" vm_barrier four 60
