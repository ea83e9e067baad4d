// SPDX-License-Identifier: GPL-2.0
/*
 * make bench, guest side: cold resolution of N destinations.
 *
 *   resolve learn INJECT_FILE SM_LID FIRST_LID N
 *   resolve neigh IFNAME BASE_IPV4 FIRST_LID N [qpn|same]
 *   resolve NETNS BASE_IPV4 N COUNTERS_FILE TIMEOUT_MS
 *
 * "learn" makes softib's SA know N simulated hosts: for each LID FIRST_LID + i
 * it writes to softib's debugfs inject file (of the SM's device) one wire
 * packet, a PathRecord GET from that LID whose SGID is the softib GID of
 * that LID (GUID 0x0002c90300a00000 | LID); the SA learns "this GID has this
 * LID" from it, exactly as it learns a remote host that asks it something.
 * Its answer goes to a LID no port holds and counts as drop_no_route on the
 * SM's device.
 * "neigh" prints an `ip -batch` file of N permanent neighbours BASE_IPV4 + i
 * -> QPN 0x48 + that GID; with "qpn", all N at the GID of FIRST_LID, with
 * the QPNs 0x100 + i (N driver neighbours, one path); with "same", all N
 * at one address (one driver neighbour, one path).
 * The last form opens COUNTERS_FILE (softib's per-device counters of the sending port, in
 * debugfs, which `ip netns exec` would hide), enters the network namespace
 * NETNS (a /run/netns/ path), sends one UDP datagram to each of the N
 * addresses BASE_IPV4, BASE_IPV4 + 1, ..., then polls the counter
 * drop_no_route until it has grown by N: every destination is a GID the SA
 * knows but no port on the fabric holds, so each one shows up there exactly
 * when the driver has resolved its path and sent the held packet. Prints
 * "sent S resolved K ns T" (T from the first send to the Nth packet on the
 * fabric, or to the timeout). Exit status: 0 if it could measure, even if
 * not every destination resolved.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long read_counter(int fd, const char *name)
{
	char buf[4096], *p;
	size_t nl = strlen(name);
	ssize_t n;

	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, nl) && p[nl] == ' ')
			return atoll(p + nl + 1);
	return -1;
}

#define SUBNET_PREFIX	0xfe80000000000000ULL
#define LLADDR_GID	":fe:80:00:00:00:00:00:00:00:02:c9:03:00:a0"
#define GUID_BASE	0x0002c90300a00000ULL
#define IP_CMD		"neigh replace"

static void put_be16(unsigned char *p, unsigned int v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put_be32(unsigned char *p, unsigned int v)
{
	put_be16(p, v >> 16);
	put_be16(p + 2, v);
}

static void put_be64(unsigned char *p, unsigned long long v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, v);
}

/* the Ethernet/zlib CRC-32, which softib uses as the ICRC */
static unsigned int crc32(const unsigned char *p, size_t len)
{
	unsigned int crc = ~0U;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xedb88320U & -(crc & 1));
	}
	return ~crc;
}

/* LRH 8 + BTH 12 + DETH 8 + MAD 256 + ICRC 4 */
#define FRAME_LEN	288

static void path_get_frame(unsigned char *f, unsigned int sm_lid, unsigned int lid)
{
	unsigned char *mad = f + 28, *rec = mad + 56;
	unsigned int crc;

	memset(f, 0, FRAME_LEN);
	f[1] = 0x02;				/* LRH: SL 0, LNH IBA local */
	put_be16(f + 2, sm_lid);		/* DLID */
	put_be16(f + 4, FRAME_LEN / 4);		/* PktLen in words */
	put_be16(f + 6, lid);			/* SLID */
	f[8] = 0x64;				/* BTH: UD SEND only */
	put_be16(f + 10, 0xffff);		/* P_Key */
	put_be32(f + 12, 1);			/* DestQP 1 */
	put_be32(f + 20, 0x80010000);		/* DETH: Q_Key of QP1 */
	put_be32(f + 24, 1);			/* SrcQP 1 */
	mad[0] = 1;				/* base version */
	mad[1] = 0x03;				/* SubnAdm */
	mad[2] = 2;				/* class version */
	mad[3] = 0x01;				/* GET */
	put_be32(mad + 12, lid);		/* TID */
	put_be16(mad + 16, 0x0035);		/* PathRecord */
	put_be64(mad + 48, 0x0c);		/* comp mask: DGID | SGID */
	put_be64(rec + 8, SUBNET_PREFIX);	/* DGID: the SM's own port */
	put_be64(rec + 16, GUID_BASE | sm_lid);
	put_be64(rec + 24, SUBNET_PREFIX);	/* SGID: the simulated host */
	put_be64(rec + 32, GUID_BASE | lid);
	crc = crc32(f, FRAME_LEN - 4);
	f[FRAME_LEN - 4] = crc;			/* little endian */
	f[FRAME_LEN - 3] = crc >> 8;
	f[FRAME_LEN - 2] = crc >> 16;
	f[FRAME_LEN - 1] = crc >> 24;
}

static int learn(const char *inject, unsigned int sm_lid, unsigned int lid0, unsigned int n)
{
	unsigned char f[FRAME_LEN];
	char hex[FRAME_LEN * 2 + 2];
	unsigned int i, k;
	int fd;

	fd = open(inject, O_WRONLY);
	if (fd < 0) {
		perror("resolve: inject file");
		return 1;
	}
	for (i = 0; i < n; i++) {
		path_get_frame(f, sm_lid, lid0 + i);
		for (k = 0; k < FRAME_LEN; k++)
			sprintf(hex + 2 * k, "%02x", f[k]);
		hex[2 * FRAME_LEN] = '\n';
		if (write(fd, hex, 2 * FRAME_LEN + 1) != 2 * FRAME_LEN + 1) {
			perror("resolve: inject write");
			return 1;
		}
	}
	close(fd);
	return 0;
}

static int neigh(const char *ifname, const char *base_ip, unsigned int lid0, unsigned int n,
		 const char *mode)
{
	in_addr_t base = ntohl(inet_addr(base_ip));
	int qpn_mode = mode && !strcmp(mode, "qpn");
	int same = mode && !strcmp(mode, "same");
	unsigned int i, lid, qpn;
	struct in_addr a;

	for (i = 0; i < n; i++) {
		a.s_addr = htonl(base + i);
		lid = qpn_mode || same ? lid0 : lid0 + i;
		qpn = qpn_mode ? 0x100 + i : 0x48;
		/* QPN, GID fe80::2:c903:a0:LID */
		printf("%s %s lladdr 00:%02x:%02x:%02x%s:%02x:%02x dev %s nud permanent\n", IP_CMD,
		       inet_ntoa(a), qpn >> 16 & 0xff, qpn >> 8 & 0xff, qpn & 0xff, LLADDR_GID,
		       lid >> 8 & 0xff, lid & 0xff, ifname);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) };
	long long c0, c, t0, t1, n, i, sent = 0, timeout_ms, ts;
	int cfd, nsfd, s, sndbuf = 16 << 20;
	struct timespec ms = { 0, 1000000 };
	char msg[16] = "ipoib-bench";
	in_addr_t base;

	if (argc == 6 && !strcmp(argv[1], "learn"))
		return learn(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "neigh"))
		return neigh(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]),
			     argc == 7 ? argv[6] : NULL);
	if (argc != 6) {
		fprintf(stderr, "usage: %s NETNS BASE_IPV4 N COUNTERS_FILE TIMEOUT_MS\n", argv[0]);
		return 2;
	}
	base = ntohl(inet_addr(argv[2]));
	n = atoll(argv[3]);
	timeout_ms = atoll(argv[5]);
	cfd = open(argv[4], O_RDONLY);
	nsfd = open(argv[1], O_RDONLY);
	if (cfd < 0 || nsfd < 0 || setns(nsfd, CLONE_NEWNET)) {
		perror("resolve: counters or netns");
		return 1;
	}
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0) {
		perror("resolve: socket");
		return 1;
	}
	/* every datagram waits in the driver until its path resolves */
	if (setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	c0 = read_counter(cfd, "drop_no_route");
	if (c0 < 0) {
		fprintf(stderr, "resolve: no drop_no_route in %s\n", argv[4]);
		return 1;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		sa.sin_addr.s_addr = htonl(base + i);
		if (sendto(s, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&sa,
			   sizeof(sa)) == sizeof(msg))
			sent++;
	}
	ts = now_ns();
	for (;;) {
		c = read_counter(cfd, "drop_no_route");
		t1 = now_ns();
		if (c - c0 >= n || t1 - t0 > timeout_ms * 1000000LL)
			break;
		nanosleep(&ms, NULL);
	}
	printf("sent %lld resolved %lld ns %lld send_ns %lld\n", sent, c - c0, t1 - t0,
	       ts - t0);
	return 0;
}
