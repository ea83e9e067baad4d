#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 900
# debug-drivers: ours
#
# Established TCP flows survive fabric events and a lossy fabric:
# 0. 100 pings a second a -> b across a reregister of each port (no LID
#    changed): none is lost.
# 1. one TCP stream copies the 50 MB file a -> b, again and again until the
#    SM has restarted 10 times and the ports have been asked to reregister
#    10 times (one event every 0.5 s; TCG copies 50 MB in 3-8 s, too fast
#    for 20 events): the stream completes and the sha256 computed by the
#    receiver matches the sender's. A 20 Hz ping a -> b during the events gives
#    the longest traffic gap through a reregister (printed as "rereg gap").
# 2. 5% loss, 5% duplication and 5% reordering on the fabric (all at once):
#    a 50 MB TCP copy keeps its sha256.
. /tests/lib.sh

MB=${TCP_MB:-50}
EVENTS=20
alive() { kill -0 "$1" 2>/dev/null; }
listening() { in_host b ss -ltn | grep -q ":$1 "; }

# copy_start PORT CMD: a TCP stream a -> b through PORT carrying what the
# shell command CMD writes; the receiver writes the sha256 to /tmp/dst.sum.
# Sets $srv and $cli.
copy_start() {
	rm -f /tmp/dst.sum
	/usr/sbin/ip netns exec b /bin/busybox nc -l -p "$1" -e sh -c 'sha256sum >/tmp/dst.sum' &
	srv=$!
	wait_for 10 listening "$1"
	/usr/sbin/ip netns exec a /bin/busybox nc 192.0.2.2 "$1" -e sh -c "$2" &
	cli=$!
}
got_sum() { cut -d' ' -f1 /tmp/dst.sum 2>/dev/null; }
copy_done() { ! alive "$srv" && ! alive "$cli"; }

# gap FILE: longest time in s between two replies of "ping -D" in FILE
gap() {
	awk -F'[][]' '/bytes from/ { t = $2 + 0; if (p && t - p > g) g = t - p; p = t }
		END { printf "%.2f\n", g }' "$1"
}

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0
check "host a (ib0)" make_host a ib0 192.0.2.1/24
check "host b (ib1)" make_host b ib1 192.0.2.2/24
check_wait "ping a -> b" 40 pings a 192.0.2.2 || exit 0
check "make a $MB MB file" dd if=/dev/urandom of=/tmp/src bs=1M count="$MB"
SUM=$(sha256sum </tmp/src | cut -d' ' -f1)

# --- 0. a reregister with unchanged LIDs costs no packet ---
# A client reregister asks for the joins again and the paths to be checked;
# the address handles stay valid (no LID changed), so traffic on them goes
# on meanwhile: 100 pings a second a -> b across a reregister of a's port
# and then of b's port, none lost.
rm -f /tmp/ping100.log
/usr/sbin/ip netns exec a /usr/bin/ping -q -i 0.01 -c 500 -W 2 192.0.2.2 >/tmp/ping100.log 2>&1 &
pinger=$!
b_rx() { in_host b cat /sys/class/net/ib1/statistics/rx_packets; }
rx0=$(b_rx)
rx_above() { [ "$(b_rx)" -gt "$1" ]; }
wait_for 20 rx_above $((rx0 + 100))	# the ping runs: about 1 s of it
echo 1 >"$(sib sib0 rereg)"
sleep 1		# pacing: the second event 1 s (100 pings) later
echo 1 >"$(sib sib1 rereg)"
check "both reregisters came while the ping ran" alive "$pinger"
wait "$pinger"
lost() { awk '/packets transmitted/ { print $1 - $4 }' /tmp/ping100.log; }
cat /tmp/ping100.log
check "reregister of both ports: 100 pings/s a -> b, none lost ($(lost) of 500)" test "$(lost)" = 0

# --- 1. 20 SM restarts / reregisters during the copy ---
/usr/sbin/ip netns exec a /usr/bin/ping -D -i 0.05 -W 1 192.0.2.2 >/tmp/ping.log 2>&1 &
pinger=$!
t0=$(_t_now_ds)
echo 0 >/tmp/reps
: >/tmp/more
# shellcheck disable=SC2016
copy_start 5001 'while [ -e /tmp/more ]; do cat /tmp/src; echo $(($(cat /tmp/reps) + 1)) >/tmp/reps; done'
n=0
while [ $n -lt $EVENTS ] && alive "$cli"; do
	case $((n % 4)) in
	0 | 2) echo 1 >"$SIB_DEBUGFS/sm_restart" ;;
	1) echo 1 >"$(sib sib0 rereg)" ;;
	3) echo 1 >"$(sib sib1 rereg)" ;;
	esac
	n=$((n + 1))
	sleep 0.5
done
rm -f /tmp/more
wait_for 600 copy_done
t1=$(_t_now_ds)
kill $pinger 2>/dev/null
R=$(cat /tmp/reps)
echo "rereg: $n events during the copy of $R x $MB MB, copy took $(( (t1 - t0) / 10 )) s, $(grep -c 'bytes from' /tmp/ping.log) ping replies"
G=$(gap /tmp/ping.log)
echo "rereg gap: longest traffic gap through the SM restarts/reregisters: $G s"
check "$n of $EVENTS SM restarts/reregisters happened during the copy" test $n = $EVENTS
check "copy through the reregisters completed" copy_done
RSUM=$(i=0; while [ $i -lt "$R" ]; do cat /tmp/src; i=$((i + 1)); done | sha256sum | cut -d' ' -f1)
check "sha256 of the $R x $MB MB stream matches after the reregisters" test "$(got_sum)" = "$RSUM"
check_wait "ping a -> b after the reregisters" 20 pings a 192.0.2.2

# --- 2. 5% loss + duplication + reordering ---
echo 6 >"$SIB_DEBUGFS/seed"
for k in loss_pct dup_pct reorder_pct; do echo 5 >"$SIB_DEBUGFS/$k"; done
t0=$(_t_now_ds)
copy_start 5002 'cat /tmp/src'
wait_for 600 copy_done
t1=$(_t_now_ds)
for k in loss_pct dup_pct reorder_pct; do echo 0 >"$SIB_DEBUGFS/$k"; done
echo "lossy: copy took $(( (t1 - t0) / 10 )) s"
grep -E '^(drop_fault|dup_fault|reorder_fault) ' "$(sib sib0 counters)" "$(sib sib1 counters)"
check "5% loss/dup/reorder: copy completed" copy_done
check "5% loss/dup/reorder: faults were applied" \
	test "$(sib_counter sib0 drop_fault)" -gt 0 -a "$(sib_counter sib0 dup_fault)" -gt 0 -a "$(sib_counter sib0 reorder_fault)" -gt 0
check "5% loss/dup/reorder: sha256 of the $MB MB copy matches" test "$(got_sum)" = "$SUM"
rm -f /tmp/src
check "unload everything" unload_all
