#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
#
# A passive connected-mode QP on an SRQ that goes to error by itself (review
# 2026-12, finding 4): an RDMA WRITE from the peer's port at the PSN the QP
# expects (softib rc_rdma_write: ib_cm's QPs allow remote writes, no R_Key
# is valid, so the HCA NAKs it with a remote access error, the QP goes to
# ERR with IB_EVENT_QP_ACCESS_ERR), or a local QP fatal error (softib
# qp_fatal), taking turns. The HCA raises Last WQE
# Reached once, as the QP enters ERR; the driver must drain and destroy that
# connection then, because nothing will raise it again. Five times (the
# stock driver: once, the RDMA WRITE, see below): b's
# passive QP from a fails, it is gone from b's SRQ within 10 s (before the
# fix it stayed until connected mode stopped, and each held one of 64
# passive slots), a's next 60000-byte ping makes a new connection and is
# answered. Then the active side: a QP fatal error on each of a's RC QPs, and
# a reaches b again over new connections within 15 s and destroys the
# failed QPs (ours; a stock finding: never). At the end, b's switch to
# datagram mode takes no drain timeout.
. /tests/lib.sh

# passive: the QPNs on sib1's SRQ (b's passive connections), one a line
# (rdma prints ranges: "lqpn 73-75,80")
passive() {
	local r
	for r in $(rdma res show srq dev sib1 2>/dev/null |
		sed -n 's/.*lqpn \([0-9,-]*\).*/\1/p' | tr ',' ' '); do
		case $r in
		*-*) seq "${r%-*}" "${r#*-}" ;;
		*) echo "$r" ;;
		esac
	done
}
not_passive() { ! passive | grep -qx "$1"; }
big_ping() { in_host a ping -c 1 -W 5 -M do -s 60000 10.13.0.2 >/dev/null 2>&1; }
no_timeout_logged() { ! dmesg_since_mark | grep -qE "did not drain|not flushed"; }
one_passive() { [ "$(passive | wc -l)" -ge 1 ]; }

check "load the IB core" load_ib_core
check "load softib ndevs=2 srq=1" load_softib ndevs=2 srq=1
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.13.0.1/24
check "host b (ib1)" make_host b ib1 10.13.0.2/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
for ns in a b; do
	ifn=ib0
	[ $ns = b ] && ifn=ib1
	in_host $ns ip link set $ifn type ipoib mode connected
	in_host $ns ip link set $ifn mtu 65520
done
check_wait "connected mode: a 60000-byte ping a -> b" 30 big_ping
# Stock: one round. Seen 2026-12-04 (twice): the stock driver destroys the
# first such QP within 10 s, but not the second, which stays on the SRQ
# until connected mode stops (an open stock finding: not explained yet;
# Documentation/testing.rst).
ROUNDS=5
[ "$IPOIB_DRIVER" = stock ] && ROUNDS=1
bad=0
r=1
while [ $r -le $ROUNDS ]; do
	if ! wait_for 10 one_passive; then
		fail "round $r: b has a passive connection" "none on sib1's SRQ"
		bad=$((bad + 1))
		break
	fi
	q=$(passive | head -n 1)
	lw=$(sib_counter sib1 last_wqe)
	if [ $((r % 2)) = 1 ]; then
		ae=$(sib_counter sib1 rc_access_err)
		echo "$q" >"$(sib sib1 rc_rdma_write)"
		if ! wait_for 5 sib_counter_ge sib1 rc_access_err $((ae + 1)); then
			fail "round $r: the RDMA WRITE at QP $q was refused (remote access error)" \
				"rc_access_err stayed $ae"
			bad=$((bad + 1))
			break
		fi
	else
		echo "$q" >"$(sib sib1 qp_fatal)"
	fi
	if ! wait_for 5 sib_counter_ge sib1 last_wqe $((lw + 1)); then
		fail "round $r: softib raised Last WQE Reached for QP $q" "last_wqe stayed $lw"
		bad=$((bad + 1))
		break
	fi
	if ! wait_for 10 not_passive "$q"; then
		fail "round $r: the failed passive QP $q is destroyed" "still on the SRQ after 10 s"
		bad=$((bad + 1))
		break
	fi
	if ! wait_for 30 big_ping; then
		fail "round $r: a new connection answers a 60000-byte ping" "no reply in 30 s"
		bad=$((bad + 1))
		break
	fi
	r=$((r + 1))
done
check "$ROUNDS passive QPs failed by themselves (RDMA WRITE, QP fatal) were destroyed, each within 10 s" test $bad = 0

# The active side too: a QP fatal error on every RC QP of a (its own
# connection to b, and b's to it). The HCA flushes an errored QP's sends
# without an error CQE of their own and raises IB_EVENT_QP_FATAL; the
# connection must be made anew, or every later send to b is flushed too
# (race-stress seed 1206 found it: d never reached c again after a
# qpfatal on c's side).
rc_qps() {	# rc_qps DEV: the RC QPs in RTS of DEV's port 1
	rdma res show qp link "$1/1" 2>/dev/null | awk '{
		q = t = s = ""
		for (i = 1; i < NF; i++) {
			if ($i == "lqpn") q = $(i + 1)
			if ($i == "type") t = $(i + 1)
			if ($i == "state") s = $(i + 1)
		}
		if (t == "RC" && s == "RTS") print q
	}'
}
# none_left QPN...: none of these QPs exists any more on sib0
none_left() {
	local q
	for q in "$@"; do
		rdma res show qp link sib0/1 2>/dev/null | grep -q "lqpn $q " && return 1
	done
	return 0
}
old=$(rc_qps sib0 | tr '\n' ' ')
check "a has RC QPs ($old)" test -n "$old"
for q in $old; do
	echo "$q" >"$(sib sib0 qp_fatal)"
done
if [ "$IPOIB_DRIVER" = ours ]; then
	check_wait "after a QP fatal error on each, a 60000-byte ping is answered again" 15 big_ping
	# shellcheck disable=SC2086
	check_wait "... and a destroyed the failed QPs" 15 none_left $old
else
	# Stock finding (2026-12-06): the in-tree driver's active QP has no
	# event handler and its send completions ignore flush errors, so the
	# connection stays "up" on a QP in error: no reply in 15 s, both QPs
	# still there (Documentation/testing.rst).
	no_recovery() { ! wait_for 15 big_ping; }
	kept() { ! none_left "$@"; }
	check "stock finding: a's connection to b never recovers (no reply in 15 s)" no_recovery
	# shellcheck disable=SC2086
	check "stock finding: the failed QPs ($old) are kept" kept $old
fi

dmesg_mark qperr
t0=$(_t_now_ds)
check "b to datagram mode" in_host b sh -c 'echo datagram >/sys/class/net/ib1/mode'
t=$(($(_t_now_ds) - t0))
check "in less than 5 s ($t ds)" test $t -lt 50
check "and no connection was left to time out" no_timeout_logged
check "unload everything" unload_all
