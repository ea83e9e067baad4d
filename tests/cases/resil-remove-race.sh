#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# debug-drivers: ours
# vms: 1
# vcpus: 2
# timeout: 600
# tier: debug
#
# Device removal racing child deletion (review 2026-12, finding 1): eight
# P_Key children of ib0 up, then all of them deleted at once (ip link del,
# each its own process, in a cgroup held to 10 % of a CPU so that their
# unregistrations are slow) while softib's device is removed (rmmod
# softib) on the other vCPU. A child's unregistration drops rtnl before its
# destructor runs; the HCA removal takes rtnl in that gap. Before the fix
# the child's IB teardown (event handler, QP, CQs, PD) ran in that
# destructor, on a device already unregistered and freed, or after softib
# was gone. Now it runs in ndo_uninit, under rtnl, as the in-tree driver's
# does. Each round: rmmod returns, every child is gone, the module unloads;
# the kernel check sees no report. Needs 2 vCPUs: the removal must run
# beside the deletions, not between them.
. /tests/lib.sh

ROUNDS=4
# one on the debug kernel, where a round takes about 100 s (KASAN sees the
# window once; the stock kernel's four rounds draw more interleavings)
case $KVER in *debug*) ROUNDS=1 ;; esac
NCHILD=8
CG=/sys/fs/cgroup
children_left() { ls -d /sys/class/net/c[0-9]* 2>/dev/null | wc -l; }
no_children() { [ "$(children_left)" = 0 ]; }

# a cgroup whose tasks get 10 ms of CPU per 100 ms, if the kernel has it
slow=
if mount -t cgroup2 none $CG 2>/dev/null || [ -e $CG/cgroup.controllers ]; then
	echo +cpu >$CG/cgroup.subtree_control 2>/dev/null
	mkdir -p $CG/slow 2>/dev/null
	echo "10000 100000" >$CG/slow/cpu.max 2>/dev/null && slow=$CG/slow
fi
echo "cgroup for the deletions: ${slow:-none (no cpu controller)}; $(nproc) CPUs"
check "the guest has 2 CPUs" test "$(nproc)" -ge 2

check "load the IB core" load_ib_core
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
bad=0
r=1
while [ $r -le $ROUNDS ]; do
	load_softib || { fail "round $r: load softib" "modprobe failed"; break; }
	wait_for 20 test -d /sys/class/net/ib0 || { fail "round $r: ib0" "no ib0"; break; }
	ip link set ib0 up
	i=1
	while [ $i -le $NCHILD ]; do
		ip link add link ib0 name c$i type ipoib pkey $((0x8000 + i)) &&
			ip link set c$i up || bad=$((bad + 1))
		i=$((i + 1))
	done
	# the deletions, each its own ip process, in the slow cgroup (a shell
	# of their own: $$ of a subshell would be this one's)
	sh -c '[ -n "$1" ] && echo $$ >"$1/cgroup.procs"
		i=1
		while [ $i -le "$2" ]; do
			/usr/sbin/ip link del c$i 2>/dev/null &
			i=$((i + 1))
		done
		wait' sh "$slow" $NCHILD &
	dels=$!
	if ! rmmod softib; then
		fail "round $r: rmmod softib beside $NCHILD deletions" "rmmod failed"
		bad=$((bad + 1))
	fi
	wait $dels
	if ! wait_for 30 no_children; then
		fail "round $r: every child is gone" "$(children_left) left"
		bad=$((bad + 1))
	fi
	[ $bad -gt 0 ] && break
	r=$((r + 1))
done
check "$ROUNDS rounds: softib removed while $NCHILD children are deleted" test $bad = 0 -a $r -gt $ROUNDS
check "unload everything" unload_all
[ -n "$slow" ] && rmdir $slow 2>/dev/null
