#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: build, boot the simulated fabric in one VM (softib ndevs=2), load
# our ib_ipoib (or the stock one if ours is not built yet, and say so), bring
# up ib0/ib1 in two network namespaces, show ip -d link / addr / neigh, ping,
# and a short iperf3. Exits 0 when everything shown worked.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/../../scripts/deps.sh" || exit 1
. "$HERE/kernel.sh" || exit 1
. "$HERE/qemu.sh"
[ -n "$KERNEL_SKIP" ] && { echo "demo: $KERNEL_SKIP"; exit 1; }
ALLOW_MISSING=1 "$HERE/build.sh" || echo "demo: (a module failed to build, see above)"
LOGDIR=$BUILD/logs/demo-$KERNEL-$$
mkdir -p "$LOGDIR"
"$HERE/mkinitramfs.sh" "$LOGDIR/initrd" || exit 1
drv=ours
if [ ! -e "$KBUILD_DIR/ipoib/ib_ipoib.ko" ]; then
	drv=stock
	echo "demo: our ib_ipoib.ko is not built yet: the demo uses the STOCK Debian ib_ipoib"
fi
echo "demo: booting $KVER under QEMU TCG (about 30 s)..."
nonce=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
out=$LOGDIR/demo
VM_TIMEOUT=${DEMO_TIMEOUT:-300} qemu_run 0 "$LOGDIR/initrd" "$out" \
	"MODE=demo CASE_NAME=demo IPOIB_DRIVER=$drv VM_ID=0 VM_COUNT=1 TEST_NONCE=$nonce" &
pid=$!
# show the guest's output as it comes (without the kernel's own lines)
while [ ! -e "$out.console" ]; do sleep 0.2; done
tail -n +1 -f --pid=$pid "$out.console" | tr -d '\r' | grep --line-buffered -Ev '^\[ *[0-9]+\.[0-9]+\] '
wait $pid
rm -f "$LOGDIR/initrd"
echo
if grep -qx "END $nonce" <(tr -d '\r' <"$out.results") && ! grep -q '^not ok' "$out.results" &&
   grep -q '^ok .* - kernel clean' "$out.results"; then
	echo "demo: OK ($drv ib_ipoib; full log: ${out#"$REPO"/}.console)"
	exit 0
fi
echo "demo: FAILED (full log: ${out#"$REPO"/}.console)"
grep '^not ok' "$out.results"
exit 1
