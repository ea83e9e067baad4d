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
# beside the deletions, not between them. A last round holds the window open
# (softib's hold_netdev) so that it is hit every time, not by chance.
. /tests/lib.sh

ROUNDS=4
# none on the debug kernel, where a round took about 100 s and hit the
# window only by chance: there the held round below opens it every time
# for KASAN; the stock kernel's four rounds draw the other interleavings
case $KVER in *debug*) ROUNDS=0 ;; esac
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
[ $ROUNDS -gt 0 ] &&
	check "$ROUNDS rounds: softib removed while $NCHILD children are deleted" \
		test $bad = 0 -a $r -gt $ROUNDS

# The same window held open instead of hit by chance: softib holds a
# reference on the child being deleted (hold_netdev), so its unregistration
# waits in the core after rtnl was dropped, before its destructor, until
# rmmod softib has removed the device and releases the reference. Before the
# fix that destructor then tore down the IB objects of a freed device (on
# the debug kernel: KASAN slab-use-after-free in ib_unregister_event_handler
# from the child's destructor).
child_held() { grep -qx c1 $SIB_DEBUGFS/hold_netdev; }
if load_softib && wait_for 20 test -d /sys/class/net/ib0; then
	ip link set ib0 up
	check "held: add child c1" ip link add link ib0 name c1 type ipoib pkey 0x8001
	ip link set c1 up
	check "held: softib holds a reference on c1" \
		sh -c "echo 'c1 8000' >$SIB_DEBUGFS/hold_netdev"
	check "held: the hold is listed" child_held
	ip link del c1 &
	del=$!
	check "held: c1 is unregistered (gone from sysfs)" wait_for 10 test ! -e /sys/class/net/c1
	check "held: its deletion still waits for the reference" kill -0 $del
	check "held: rmmod softib while c1 waits" rmmod softib
	wait $del
	check "held: ip link del c1 returned 0 once released" test $? = 0
	check "held: nothing is left of c1" test "$(children_left)" = 0
else
	fail "held: load softib" "no ib0"
fi
check "unload everything" unload_all
[ -n "$slow" ] && rmdir $slow 2>/dev/null
