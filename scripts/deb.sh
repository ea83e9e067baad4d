#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make deb: build build/deb/ib-ipoib-dkms_<version>_all.deb with Debian's own
# tooling (debhelper + dh-dkms): the driver's sources (Kbuild, ipoib*.[ch])
# in /usr/src/ib-ipoib-<version>/ with dkms.conf, and the maintainer scripts
# dh_dkms writes (dkms add/build/install on installation, dkms remove on
# removal; Debian's dkms then builds it for every new kernel). <version> is
# IPOIB_VERSION from ipoib.h, also the module's MODULE_VERSION. softib and
# the tests are not packaged.
# DEB_SRC=DIR packages the sources of DIR instead (tests/dkms.sh: a second
# version, for the upgrade), DEB_OUT=DIR writes there instead of build/deb.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "${DEB_SRC:-$REPO}"

for p in debhelper dh-dkms dpkg-dev; do
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
		echo "deb: $p is not installed (DEPS_EXTRA='debhelper dh-dkms' scripts/deps.sh)" >&2
		exit 1
	fi
done
ver=$(sed -n 's/^#define IPOIB_VERSION[[:space:]]*"\([^"]*\)".*/\1/p' ipoib.h)
if [ -z "$ver" ]; then
	echo "deb: no IPOIB_VERSION in ipoib.h" >&2
	exit 1
fi

out=${DEB_OUT:-$REPO/build/deb}
src=$out/ib-ipoib-$ver
rm -rf "$out"
mkdir -p "$src/debian/source"
cp -p Kbuild ipoib*.c ipoib*.h LICENSE "$src/"
cp -p dkms.conf "$src/debian/ib-ipoib-dkms.dkms"

cd "$src/debian"
echo "3.0 (native)" >source/format
cat >control <<EOT
Source: ib-ipoib
Section: kernel
Priority: optional
Maintainer: ib_ipoib developers <ib-ipoib@localhost>
Build-Depends: debhelper-compat (= 13), dh-sequence-dkms
Standards-Version: 4.6.2
Rules-Requires-Root: no

Package: ib-ipoib-dkms
Architecture: all
Depends: \${misc:Depends}
Description: IP over InfiniBand (datagram mode) driver, DKMS source
 An out-of-tree ib_ipoib: IP over InfiniBand in datagram mode (RFC 4391,
 RFC 4392) on the kernel's RDMA core. DKMS builds it for every installed
 kernel into /lib/modules/<kernel>/updates/dkms/, where it takes the place
 of the in-tree ib_ipoib; removing the package brings the in-tree one back.
EOT
cat >changelog <<EOT
ib-ipoib ($ver) unstable; urgency=medium

  * Built by make deb from $(git -C "$REPO" describe --always --dirty 2>/dev/null || echo "a source tree").

 -- ib_ipoib developers <ib-ipoib@localhost>  $(date -R)
EOT
cat >copyright <<EOT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ib_ipoib

Files: *
License: GPL-2.0
 On Debian systems the full text is in /usr/share/common-licenses/GPL-2.
EOT
cat >ib-ipoib-dkms.install <<EOT
Kbuild usr/src/ib-ipoib-$ver/
ipoib*.c usr/src/ib-ipoib-$ver/
ipoib*.h usr/src/ib-ipoib-$ver/
EOT
# shellcheck disable=SC2016
printf '#!/usr/bin/make -f\n%%:\n\tdh $@\n\noverride_dh_dkms:\n\tdh_dkms -V\n\n# the module is built by DKMS on the target, not here\noverride_dh_auto_build:\n' >rules
chmod +x rules

cd "$src"
dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed (log: ${out#"$REPO"/}/build.log)" >&2
	exit 1
}
deb=$out/ib-ipoib-dkms_${ver}_all.deb
[ -e "$deb" ] || { echo "deb: $deb not produced" >&2; exit 1; }
echo "deb: built ${deb#"$REPO"/}"
dpkg-deb -c "$deb" | awk '{ print "deb:   " $NF }'
