/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the tests of train/: fixture paths, error checks. */
#ifndef TRN_TEST_UTIL_H
#define TRN_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline const char *trn_fixture(const char *name)
{
	static char path[4][512];
	static int next;
	const char *dir = getenv("ICE_TRN_FIXTURES");
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", dir != NULL ? dir : "tests/train", name);
	return p;
}

static inline const char *trn_example(const char *name)
{
	static char path[512];
	const char *dir = getenv("ICE_TRN_EXAMPLES");

	snprintf(path, sizeof(path), "%s/%s", dir != NULL ? dir : "train", name);
	return path;
}

#endif /* TRN_TEST_UTIL_H */
