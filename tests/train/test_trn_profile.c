// SPDX-License-Identifier: Apache-2.0
/*
 * trn profiles: a good file, the example file, save + load round trip, and
 * every refusal naming file, line, key and expectation. Fixtures here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "trn.h"
#include "trn_test_util.h"

static void test_good(void **state)
{
	struct trn_profile p[4];
	struct ice_cfg_err err;
	char buf[768];
	int n = trn_profiles_load(trn_fixture("prof_good.yaml"), p, 4, &err);

	if (n < 0)
		fail_msg("%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
	assert_int_equal(n, 2);
	assert_string_equal(p[0].name, "gpu-a");
	assert_string_equal(p[0].kind, "cuda");
	assert_false(p[0].emulated);
	assert_true(p[0].gflops == 50000);
	assert_true(p[0].burst_gflops == 60000);
	assert_true(p[1].burst_gflops == 0); /* absent: unknown */
	/* pp_gflops_at, kept in order of micro-batch */
	assert_int_equal(p[0].npp_at, 2);
	assert_int_equal(p[0].pp_at_mb[0], 4);
	assert_true(p[0].pp_at_gflops[0] == 30000.5);
	assert_true(trn_profile_pp_at(&p[0], 16) == 40000);
	assert_true(trn_profile_pp_at(&p[0], 8) == 0);
	assert_int_equal(p[1].npp_at, 0);
	assert_true(p[0].mem_gbps == 3000);
	assert_true(p[0].h2d_gbps == 25);
	assert_true(p[0].d2h_gbps == 26);
	assert_true(p[0].reduce_gbps == 900);
	assert_string_equal(p[0].source, "measured by ice-devprof on box at 2026-01-01T00:00:00Z");
	assert_string_equal(p[1].name, "emu-slow");
	assert_string_equal(p[1].kind, "host");
	assert_true(p[1].emulated);
	assert_true(p[1].gflops == 1.5);
	assert_true(p[1].mem_gbps == 0); /* absent: unknown */
	assert_string_equal(p[1].source, "stated");
	assert_int_equal(trn_profile_find(p, n, "emu-slow"), 1);
	assert_int_equal(trn_profile_find(p, n, "gpu-a"), 0);
	assert_int_equal(trn_profile_find(p, n, "nope"), -1);
	/* max is honoured */
	assert_int_equal(trn_profiles_load(trn_fixture("prof_good.yaml"), p, 1, &err), -E2BIG);
	assert_int_equal(err.line, 14);
}

static void test_example(void **state)
{
	struct trn_profile p[4];
	struct ice_cfg_err err;
	char buf[768];
	int n = trn_profiles_load(trn_example("profiles/emu-2kind.yaml"), p, 4, &err);

	if (n < 0)
		fail_msg("%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
	assert_int_equal(n, 2);
	assert_int_equal(trn_profile_find(p, n, "emu-fast"), 0);
	assert_int_equal(trn_profile_find(p, n, "emu-slow"), 1);
	assert_true(p[0].emulated && p[1].emulated);
	assert_true(p[0].gflops > p[1].gflops);
}

static void test_round_trip(void **state)
{
	struct trn_profile p[2], q[2];
	struct ice_cfg_err err;
	char path[] = "/tmp/ice-trn-prof-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	memset(p, 0, sizeof(p));
	snprintf(p[0].name, sizeof(p[0].name), "h200");
	snprintf(p[0].kind, sizeof(p[0].kind), "cuda");
	p[0].gflops = 51234.5;
	p[0].burst_gflops = 61000.5;
	p[0].pp_gflops = 48000.5;
	p[0].mem_gbps = 4100.25;
	p[0].h2d_gbps = 50.5;
	p[0].d2h_gbps = 49.75;
	p[0].reduce_gbps = 1800;
	assert_int_equal(trn_profile_pp_at_set(&p[0], 8, 47000.5), 0);
	assert_int_equal(trn_profile_pp_at_set(&p[0], 2, 30000), 0);
	assert_int_equal(trn_profile_pp_at_set(&p[0], 8, 47500.5), 0); /* replaced */
	snprintf(p[0].source, sizeof(p[0].source), "measured by ice-devprof on \"x\" at 2026");
	snprintf(p[1].name, sizeof(p[1].name), "emu");
	snprintf(p[1].kind, sizeof(p[1].kind), "host");
	p[1].emulated = true;
	p[1].gflops = 2.5;
	p[1].burst_gflops = 0; /* unknown: left out, read back as 0 */
	snprintf(p[1].source, sizeof(p[1].source), "stated");
	{
		/* the file gone before any check can fail */
		int saved = trn_profiles_save(path, p, 2),
		    loaded = trn_profiles_load(path, q, 2, &err);

		unlink(path);
		assert_int_equal(saved, 0);
		assert_int_equal(loaded, 2);
	}
	for (int i = 0; i < 2; i++) {
		assert_string_equal(p[i].name, q[i].name);
		assert_string_equal(p[i].kind, q[i].kind);
		assert_string_equal(p[i].source, q[i].source);
		assert_int_equal(p[i].emulated, q[i].emulated);
		assert_true(p[i].gflops == q[i].gflops);
		assert_true(p[i].burst_gflops == q[i].burst_gflops);
		assert_true(p[i].pp_gflops == q[i].pp_gflops);
		assert_true(p[i].mem_gbps == q[i].mem_gbps);
		assert_true(p[i].h2d_gbps == q[i].h2d_gbps);
		assert_true(p[i].d2h_gbps == q[i].d2h_gbps);
		assert_true(p[i].reduce_gbps == q[i].reduce_gbps);
		assert_int_equal(p[i].npp_at, q[i].npp_at);
		for (int j = 0; j < p[i].npp_at; j++) {
			assert_int_equal(p[i].pp_at_mb[j], q[i].pp_at_mb[j]);
			assert_true(p[i].pp_at_gflops[j] == q[i].pp_at_gflops[j]);
		}
	}
	assert_int_equal(q[0].npp_at, 2);
	assert_int_equal(q[0].pp_at_mb[0], 2);
	assert_true(q[0].pp_at_gflops[1] == 47500.5);
	assert_true(trn_profiles_save("/nonexistent-dir/x.yaml", p, 1) < 0);
	/* a pipeline takes pp_gflops where stated, gflops elsewhere */
	trn_profiles_pp(q, 2);
	assert_true(q[0].gflops == 48000.5);
	assert_true(q[1].gflops == 2.5);
	/* at a micro-batch: its stated speed, else pp_gflops, else gflops */
	trn_profiles_pp_at(q, 2, 8);
	assert_true(q[0].gflops == 47500.5);
	assert_true(q[1].gflops == 2.5);
	trn_profiles_pp_at(q, 2, 4);
	assert_true(q[0].gflops == 48000.5);
	/* a full table refuses another size, takes a known one */
	for (int mb = 100; q[0].npp_at < TRN_PP_AT_MAX; mb++)
		assert_int_equal(trn_profile_pp_at_set(&q[0], mb, 1), 0);
	assert_int_equal(trn_profile_pp_at_set(&q[0], 99, 1), -E2BIG);
	assert_int_equal(trn_profile_pp_at_set(&q[0], 8, 1), 0);
}

struct bad_case {
	const char *file;
	int line;
	const char *key;
	const char *expect; /* a piece of the message */
};

static void test_errors(void **state)
{
	static const struct bad_case cases[] = {
		{"prof_bad_unknown.yaml", 7, "devices[1].gflop", "unknown key"},
		{"prof_bad_missing.yaml", 5, "devices[1].gflops", "missing required key"},
		{"prof_bad_zero.yaml", 4, "devices[0].gflops", "> 0"},
		{"prof_bad_negative.yaml", 6, "devices[0].reduce_gbps", "> 0"},
		{"prof_bad_number.yaml", 4, "devices[0].gflops", "expected a number"},
		{"prof_bad_kind.yaml", 3, "devices[0].kind", "host, cuda, hip"},
		{"prof_bad_top.yaml", 5, "device", "expected 'devices'"},
		{"prof_bad_dup.yaml", 5, "devices[1].name", "unique"},
		{"prof_bad_at_mb.yaml", 5, "devices[0].pp_gflops_at", "integer >= 1"},
		{"prof_bad_at_dup.yaml", 5, "devices[0].pp_gflops_at.4", "duplicate key"},
		{"prof_bad_at_speed.yaml", 5, "devices[0].pp_gflops_at",
		 "GFLOP/s > 0 at micro-batch 8"},
		{"prof_bad_at_form.yaml", 5, "devices[0].pp_gflops_at", "expected a mapping"},
	};
	struct trn_profile p[4];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		struct ice_cfg_err err;
		char buf[768];
		int ret;

		memset(&err, 0, sizeof(err));
		ret = trn_profiles_load(trn_fixture(c->file), p, 4, &err);
		ice_cfg_err_str(&err, buf, sizeof(buf));
		print_message("%s -> %s\n", c->file, buf);
		assert_true(ret < 0);
		assert_non_null(strstr(err.file, c->file));
		assert_int_equal(err.line, c->line);
		assert_string_equal(err.key, c->key);
		assert_non_null(strstr(err.msg, c->expect));
	}
}

static void test_missing_file(void **state)
{
	struct trn_profile p[1];
	struct ice_cfg_err err;

	assert_int_equal(trn_profiles_load(trn_fixture("no-such.yaml"), p, 1, &err), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),	     cmocka_unit_test(test_example),
		cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_errors),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
