#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 600
#
# The softib SA seen through the stock ib_ipoib: the IPoIB broadcast group
# and ARP through it; IPv4 multicast joins (full and send-only) and a leave
# in the SA's group dump; path queries; ClassPortInfo after a client
# reregister; the SA fault knobs (drop, error status, busy, bad MLID) make
# joins and path queries fail, and clearing them recovers.
. /tests/lib.sh

SA=$SIB_DEBUGFS
BCAST=ff12:401b:ffff:0000:0000:0000:ffff:ffff
# IPv4 group -> MGID ff12:401b:PKEY::<low 28 bits of the group> (RFC 4391)
MG_JOIN=ff12:401b:ffff:0000:0000:0000:0f01:0203		# 239.1.2.3
MG_SENDONLY=ff12:401b:ffff:0000:0000:0000:0f09:0909	# 239.9.9.9
MG_BUSY=ff12:401b:ffff:0000:0000:0000:0f01:0204		# 239.1.2.4
MG_STATUS=ff12:401b:ffff:0000:0000:0000:0f01:0205	# 239.1.2.5
MG_BADMLID=ff12:401b:ffff:0000:0000:0000:0f01:0206	# 239.1.2.6
MG_DELAY=ff12:401b:ffff:0000:0000:0000:0f01:0207	# 239.1.2.7

gid_of() { cat "/sys/class/infiniband/$1/ports/1/gids/0"; }

# sa_group MGID: the SA's dump has group MGID
sa_group() { grep -q "^$1 " "$SA/sa_groups"; }
sa_no_group() { ! sa_group "$1"; }

# sa_member MGID GID JOIN_STATE: the dump lists GID under MGID with JOIN_STATE
sa_member() {
	awk -v m="$1" -v g="$2" -v j="$3" '
		$1 != "member" { in_g = ($1 == m) }
		in_g && $1 == "member" && $2 == g && $4 == j { f = 1 }
		END { exit !f }' "$SA/sa_groups"
}

# sa_above NAME VALUE: the SA counter NAME is above VALUE
sa_above() { [ "$(sa_counter "$1")" -gt "$2" ]; }


# mcg_complete IFNAME MGID: ipoib's debugfs says the join of MGID completed
# (ipoib prints the MGID as 8 groups of %x: no leading zeros)
mcg_complete() {
	awk -v m="$2" '$1 == "GID:" { g = ($2 == m) } g && $1 == "complete:" && $2 == "yes" { f = 1 }
		END { exit !f }' "/sys/kernel/debug/ipoib/$1_mcg"
}

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=4" load_softib ndevs=4 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0..ib3 exist" 20 test -d /sys/class/net/ib3 || exit 0
for f in sa_drop sa_delay_ms sa_status sa_busy sa_bad sa_groups sa_ports sa_counters; do
	[ -e "$SA/$f" ] || fail "SA debugfs file $f exists" "no $SA/$f"
done

GID0=$(gid_of sib0)
GID1=$(gid_of sib1)
GID2=$(gid_of sib2)

make_host h0 ib0 10.10.0.1/24
make_host h1 ib1 10.10.0.2/24
make_host h2 ib2 10.10.0.3/24
for h in 0 1 2; do
	check_wait "ib$h carrier on (broadcast group joined)" 30 wait_carrier h$h ib$h 1
done

# --- the broadcast group ---
cat "$SA/sa_groups"
check "broadcast group: qkey 0x0b1b, mtu 2048, pkey 0xffff, mlid 0xc001-0xfffe" \
	grep -Eq "^$BCAST mlid 0x(c00[1-9a-f]|c0[1-9a-f][0-9a-f]|c[1-9a-f][0-9a-f]{2}|[d-f][0-9a-f]{3}) qkey 0x00000b1b mtu 2048 pkey 0xffff sl 0$" "$SA/sa_groups"
for h in 0:"$GID0" 1:"$GID1" 2:"$GID2"; do
	check "broadcast group lists ib${h%%:*} (${h#*:}) as full member" \
		sa_member $BCAST "${h#*:}" 0x1
done
check "ib0 MTU is 2044 (SA group MTU 2048)" sh -c "/usr/sbin/ip -n h0 link show ib0 | grep -q 'mtu 2044 '"

# --- ARP through the broadcast group, then unicast over an SA path ---
path0=$(sa_counter path_get)
check_wait "ping h0 -> h1" 30 pings h0 10.10.0.2
check "h0 resolved h1 by ARP" sh -c "/usr/sbin/ip -n h0 neigh show 10.10.0.2 dev ib0 | grep -q lladdr"
check "path_get counter moved ($path0 -> $(sa_counter path_get))" sa_above path_get "$path0"

# --- IPv4 multicast: full join, send-only join, leave ---
set0=$(sa_counter mcm_set)
check "h1 joins 239.1.2.3 (ip addr autojoin)" in_host h1 ip addr add 239.1.2.3/32 dev ib1 autojoin
check_wait "SA lists ib1 as full member of $MG_JOIN" 20 sa_member $MG_JOIN "$GID1" 0x1
check "mcm_set counter moved" sa_above mcm_set "$set0"
check "ib0 is not a member of $MG_JOIN" sh -c "! awk '/^$MG_JOIN /{g=1;next} /^[0-9a-f]/{g=0} g' $SA/sa_groups | grep -q '$GID0'"

in_host h0 ip route add 224.0.0.0/4 dev ib0
in_host h0 ping -c 2 -W 1 239.9.9.9 >/dev/null 2>&1
check_wait "SA lists ib0 as send-only full member (0x8) of $MG_SENDONLY" 20 \
	sa_member $MG_SENDONLY "$GID0" 0x8

del0=$(sa_counter mcm_delete)
check "h1 leaves 239.1.2.3" in_host h1 ip addr del 239.1.2.3/32 dev ib1
check_wait "group $MG_JOIN deleted with its last member" 20 sa_no_group $MG_JOIN
check "mcm_delete counter moved" sa_above mcm_delete "$del0"
cat "$SA/sa_groups"

# --- ClassPortInfo after a client reregister ---
cpi0=$(sa_counter cpi_get)
echo 1 >"$(sib sib1 rereg)"
check_wait "ClassPortInfo GET after client reregister" 20 sa_above cpi_get "$cpi0"
check_wait "ib1 rejoined the broadcast group after reregister" 30 wait_carrier h1 ib1 1
check_wait "ping h1 -> h0 after reregister" 30 pings h1 10.10.0.1

# --- SA drops everything: a fresh interface stays down, a new path fails ---
drop0=$(sa_counter dropped)
echo 1 >"$SA/sa_drop"
make_host h3 ib3 10.10.0.4/24
check_fail "ping h0 -> h2 (no path yet) fails while the SA drops" \
	in_host h0 ping -c 3 -W 1 10.10.0.3
check_fail "fresh ib3 gets no carrier while the SA drops (8 s)" wait_carrier h3 ib3 8
check "dropped counter moved ($drop0 -> $(sa_counter dropped))" sa_above dropped "$drop0"
check "ib3 is in no SA group" sh -c "! grep -q '$(gid_of sib3)' $SA/sa_groups"
echo 0 >"$SA/sa_drop"
check_wait "ib3 carrier on after the SA stops dropping" 60 wait_carrier h3 ib3 1
check_wait "ping h0 -> h2 recovers" 60 pings h0 10.10.0.3

# --- sa_status: answers with an error status ---
err0=$(sa_counter errored)
nrec0=$(sa_counter path_no_record)
echo 0x0300 >"$SA/sa_status"
check "sa_status reads back 0x0300" grep -qx 0x0300 "$SA/sa_status"
check_fail "ping h0 -> h3 (no path yet) fails with sa_status 0x0300" \
	in_host h0 ping -c 3 -W 1 10.10.0.4
check "h1 joins 239.1.2.5" in_host h1 ip addr add 239.1.2.5/32 dev ib1 autojoin
check_wait "errored counter moved" 20 sa_above errored "$err0"
# barrier: the join was tried again and errored again, so the answers had
# their chance to make a group
check_wait "errored counter moved again (a retry)" 30 sa_above errored "$(sa_counter errored)"
check "no group $MG_STATUS while every answer is an error" sa_no_group $MG_STATUS
check "path_no_record did not move (the status came from sa_status)" \
	test "$(sa_counter path_no_record)" = "$nrec0"
echo 0 >"$SA/sa_status"
check_wait "ping h0 -> h3 recovers" 60 pings h0 10.10.0.4
check_wait "join of $MG_STATUS recovers" 60 sa_member $MG_STATUS "$GID1" 0x1

# --- sa_busy: status 1 ---
err0=$(sa_counter errored)
dmesg_mark busy
echo 1 >"$SA/sa_busy"
check "h1 joins 239.1.2.4" in_host h1 ip addr add 239.1.2.4/32 dev ib1 autojoin
check_wait "errored counter moved with sa_busy" 20 sa_above errored "$err0"
check_wait "ipoib reports the failed join" 20 sh -c "dmesg | sed -n '/$_T_MARK/,\$p' | grep -q 'multicast join failed for ff12:401b:ffff:0000:0000:0000:0f01:0204, status -22'"
check "no group $MG_BUSY while the SA is busy" sa_no_group $MG_BUSY
echo 0 >"$SA/sa_busy"
check_wait "join of $MG_BUSY recovers" 60 sa_member $MG_BUSY "$GID1" 0x1

# --- sa_delay_ms: late answers (after ib_sa's retries) still complete ---
set0=$(sa_counter mcm_set)
echo 500 >"$SA/sa_delay_ms"
check "h1 joins 239.1.2.7" in_host h1 ip addr add 239.1.2.7/32 dev ib1 autojoin
check_wait "join of $MG_DELAY completes with 500 ms SA delay" 30 sa_member $MG_DELAY "$GID1" 0x1
check_wait "ib_sa retried the slow join and the SA took every copy (mcm_set +2)" 10 sa_above mcm_set $((set0 + 1))
echo 0 >"$SA/sa_delay_ms"

# --- sa_bad=mlid: a join answer ipoib must refuse ---
dmesg_mark badmlid
echo mlid >"$SA/sa_bad"
check "sa_bad reads back mlid" grep -qx mlid "$SA/sa_bad"
check_fail "sa_bad refuses an unknown value" sh -c "echo bogus >$SA/sa_bad"
check "h1 joins 239.1.2.6" in_host h1 ip addr add 239.1.2.6/32 dev ib1 autojoin
check_wait "ipoib refuses the bad MLID (attach fails)" 20 sh -c "dmesg | sed -n '/$_T_MARK/,\$p' | grep -q \"couldn't attach QP to multicast group\""
echo none >"$SA/sa_bad"
if [ -e /sys/kernel/debug/ipoib/ib1_mcg ]; then
	check_wait "join of $MG_BADMLID completes once sa_bad is none" 60 mcg_complete ib1 ff12:401b:ffff:0:0:0:f01:206
else
	skip "join of $MG_BADMLID completes once sa_bad is none" "no ipoib debugfs"
fi
check_wait "ping h1 -> h2 still works" 30 pings h1 10.10.0.3

cat "$SA/sa_counters"
cat "$SA/sa_groups"
check "unload everything" unload_all
