# SPDX-License-Identifier: GPL-2.0
# Sourced by tests/run.sh: the VM slots several runs share (POOL).
#
# tests/check.sh runs the stock suite and its kernel tiers (6.12, 7.x,
# debug) as concurrent runs of tests/run.sh, one per kernel, that share the
# machine's JOBS VM slots through the directory POOL. Each run offers its
# next jobs (its own scheduler, at most its JOBS at a time) and a job waits
# here for a slot before it boots. Among the waiting jobs of all runs the
# one that goes next is chosen as one run's scheduler chooses: a
# multi-vCPU guest first while none runs, otherwise the first that fits in
# the order of their priority (the longest first). So the tiers fill the
# stock suite's last minutes instead of each ending with one VM alone.
#
# $POOL/state holds "USED MULTI" (slots taken, multi-vCPU guests running),
# $POOL/slots the number of slots, $POOL/wait/ one file per waiting job
# named PRIO.V.W.ID (PRIO inverted, so that the shell's sorted glob lists
# the longest first); $POOL/lock serialises them (flock).

# pool_init DIR SLOTS: a new pool
pool_init() {
	mkdir -p "$1/wait"
	echo "0 0" >"$1/state"
	echo "$2" >"$1/slots"
	: >"$1/lock"
}

# pool_acquire ID W V PRIO: wait for W slots (V=1: a multi-vCPU guest) for
# the job ID (a number unique in the pool), PRIO its expected length
pool_acquire() {
	local me lfd used multi slots f p v w id pick got=0
	me=$(printf '%09d' $((999999999 - $4))).$3.$2.$1
	: >"$POOL/wait/$me"
	read -r slots <"$POOL/slots"
	while :; do
		exec {lfd}>"$POOL/lock"
		flock "$lfd"
		read -r used multi <"$POOL/state"
		pick=
		for f in "$POOL"/wait/*; do
			[ -e "$f" ] || continue
			IFS=. read -r p v w id <<<"${f##*/}"
			[ $((used + w)) -le "$slots" ] || continue
			if [ "$multi" = 0 ] && [ "$v" = 1 ]; then
				pick=$f
				break
			fi
			[ "$v" = 1 ] && [ "$multi" -gt 0 ] && continue
			[ -z "$pick" ] && pick=$f
			# a multi-vCPU job later in the list goes first
			[ "$multi" = 0 ] || break
		done
		if [ "$pick" = "$POOL/wait/$me" ]; then
			rm -f "$pick"
			echo "$((used + $2)) $((multi + $3))" >"$POOL/state"
			got=1
		fi
		exec {lfd}>&-
		[ $got = 1 ] && return 0
		sleep 0.5
	done
}

# pool_release W V: give back what pool_acquire took
pool_release() {
	local lfd used multi
	exec {lfd}>"$POOL/lock"
	flock "$lfd"
	read -r used multi <"$POOL/state"
	echo "$((used - $1)) $((multi - $2))" >"$POOL/state"
	exec {lfd}>&-
}
