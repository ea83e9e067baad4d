#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock/stock
# vms: 2
# timeout: 180
#
# The two-VM mode itself: eth0 between the VMs (QEMU socket netdev on the
# host's loopback), the peer's IPv6 link-local address, and vm_barrier.
# And lib.sh's TCP echo client, which every TCP data check uses: it must
# not stall when the data outgrows the socket buffers.
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

# tcp_echo_client reads while it writes: 16 MiB through 64 KiB socket
# buffers on a netns's loopback. busybox nc's own pump (nc ADDR PORT <TX
# >RX, used before 2026-12-04) stalls so on a multi-CPU host (1.4 MiB of
# 16, both windows closed for good) but not in this one-vCPU guest: the
# check guards the new client (testing.rst, "The TCP echo client")
if [ "$VM_ID" = 0 ]; then
	check "netns echo with 64 KiB TCP buffers" sh -c '/usr/sbin/ip netns add echo &&
		/usr/sbin/ip -n echo link set lo up &&
		/usr/sbin/ip netns exec echo sh -c "echo 4096 32768 65536 >/proc/sys/net/ipv4/tcp_rmem &&
			echo 4096 16384 65536 >/proc/sys/net/ipv4/tcp_wmem"'
	check "TCP echo server in it" tcp_echo_serve echo 5299
	tcp_echo_check "TCP echo through 64 KiB buffers" echo 127.0.0.1 5299 16384
fi
