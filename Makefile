# SPDX-License-Identifier: GPL-2.0
#
# ib_ipoib: IP over InfiniBand (datagram mode) as an out-of-tree module.
#
#   make                 build ib_ipoib.ko and tests/softib/softib.ko into build/<kver>/
#   make demo            boot the simulated fabric and show IPoIB at work
#   make check           deps + build + lint + runner self-test + VM suite + debug tier
#   make check CASES=softib-*   ... with a subset of tests/cases/
#   make test CASES=...  build + VM suite only (quick developer loop)
#   make check-debug     the whole suite on the debug kernel (KASAN, lockdep, kmemleak)
#   make debug-kernel    build the debug kernel into build/ when ../shared has none (~1 h)
#   make lint            W=1, sparse, checkpatch --strict over every .c/.h
#   make install         install ib_ipoib.ko into /lib/modules/<kver>/updates + depmod
#   make uninstall       remove it again + depmod (the in-tree ib_ipoib is back)
#   make deb             build/deb/ib-ipoib-dkms_<version>_all.deb (DKMS, dh-dkms)
#   make bench           ours vs stock ib_ipoib vs the fabric ceiling (build/bench/)
#   make shell           an interactive shell in the test VM (debugging)
#
# KVER=/KDIR= build for another kernel (default: the newest installed Debian
# linux-headers-6.1.*-amd64; KVER=6.12: the newest 6.12 ones); KERNEL=debug
# selects the prebuilt debug kernel in ../shared/kernels/6.1-debug. See
# README.md and Documentation/testing.rst.

SHELL := /bin/bash
KERNEL ?= stock
export KERNEL KVER KDIR CASES CASES_DIR

# (The kernel build system reads ./Kbuild, never this file.)
.PHONY: all modules deps lint selftest test vmtest check check-debug debug-kernel install uninstall deb demo bench shell clean help

all modules:
	@bash tests/vm/build.sh

deps:
	@bash scripts/deps.sh

lint:
	@bash scripts/lint.sh

selftest:
	@bash tests/selftest/run.sh

test vmtest:
	@bash tests/run.sh

check:
	@bash tests/check.sh

check-debug:
	@KERNEL=debug bash tests/check.sh

debug-kernel:
	@bash tests/vm/debug-kernel.sh

install:
	@bash tests/vm/install.sh

uninstall:
	@bash tests/vm/install.sh --uninstall

deb:
	@bash scripts/deb.sh

demo:
	@bash tests/vm/demo.sh

shell:
	@bash tests/vm/shell.sh

bench:
	@bash tests/bench/run.sh

clean:
	rm -rf build

help:
	@sed -n '3,23s/^# \{0,1\}//p' Makefile
