// SPDX-License-Identifier: Apache-2.0
/*
 * ice-nic-fixture: build an mlx5 fixture tree (nic_fixture.h) for the
 * agent's NIC backend in scripts (the end-to-end test, by hand):
 *   ice-nic-fixture ROOT upstream|oot NPORTS NQPS [TICKS]
 * TICKS (default 1): how often every counter advances after the start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nic_fixture.h"

int main(int argc, char **argv)
{
	struct nic_fixture f;
	unsigned ticks = argc > 5 ? (unsigned)atoi(argv[5]) : 1;
	int ret;

	if (argc < 5 || (strcmp(argv[2], "upstream") != 0 && strcmp(argv[2], "oot") != 0)) {
		fprintf(stderr, "usage: %s ROOT upstream|oot NPORTS NQPS [TICKS]\n", argv[0]);
		return 2;
	}
	ret = nic_fixture_make(&f, argv[1],
			       strcmp(argv[2], "oot") == 0 ? NIC_FIXTURE_OOT : NIC_FIXTURE_UPSTREAM,
			       (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]));
	for (unsigned i = 0; ret == 0 && i < ticks; i++)
		ret = nic_fixture_tick(&f, f.nqps);
	if (ret != 0) {
		fprintf(stderr, "%s: cannot build the fixture: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	printf("%s %s %s %u\n", f.ifname, f.dev, f.pci, f.dev_index);
	free(f.qtick);
	return 0;
}
