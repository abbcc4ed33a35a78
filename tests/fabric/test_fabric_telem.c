// SPDX-License-Identifier: Apache-2.0
/*
 * Switch port telemetry records (fabric/fabric_telem.c), fed by hand: the
 * sequence, the interval's mean queue depth from the depth's integral,
 * counter resets (counters going back, another map) counted and counted
 * from zero, readings without counters (a port gone), and the record's
 * fields under their OpenConfig names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fabric_telem.h"

#define MS 1000000ull

/* A port that carried bytes/1000 packets of 1000 bytes by t_ms, with a mean
 * queue of depth bytes since 0. */
static struct fab_telem_read rd(uint64_t t_ms, uint64_t bytes, uint64_t mean_depth)
{
	return (struct fab_telem_read){.mono_ns = t_ms * MS,
				       .wall_ms = 1700000000000ull + t_ms,
				       .admin_up = true,
				       .oper = FAB_OPER_UP,
				       .counters = true,
				       .map_id = 7,
				       .octets = bytes,
				       .pkts = bytes / 1000,
				       .depth = mean_depth,
				       .peak_depth = 2 * mean_depth,
				       .depth_area = mean_depth * t_ms * MS};
}

static const char *field(const struct fab_telem_field *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(f[i].name, name) == 0)
			return f[i].val;
	return NULL;
}

/* Two readings 100 ms apart: seq 1, 2; the mean depth over the interval
 * from the integral's change; no reset. */
static void test_telem_interval(void **state)
{
	struct fab_telem_port p = {0};
	struct fab_telem_read a = rd(1000, 1000000, 0), b = rd(1100, 1250000, 0);

	(void)state;
	assert_false(fab_telem_update(&p, &a));
	assert_int_equal(p.seq, 1);
	assert_int_equal(p.dt_ns, 0);
	/* 100 ms at a mean of 5000 B */
	b.depth = 3000;
	b.depth_area = a.depth_area + 5000 * 100 * MS;
	assert_false(fab_telem_update(&p, &b));
	assert_int_equal(p.seq, 2);
	assert_int_equal(p.dt_ns, 100 * MS);
	assert_int_equal(p.avg_depth, 5000);
	assert_int_equal(p.resets, 0);
}

/* Counters going back (a switch reloaded): counted once per event, the
 * interval from zero; the next interval is ordinary again. */
static void test_telem_reset_backwards(void **state)
{
	struct fab_telem_port p = {0};
	struct fab_telem_read a = rd(1000, 5000000, 100), b = rd(1100, 40000, 0),
			      c = rd(1200, 90000, 0);

	(void)state;
	fab_telem_update(&p, &a);
	b.depth_area = 200 * 100 * MS; /* the new counters' own integral */
	assert_true(fab_telem_update(&p, &b));
	assert_true(p.reset);
	assert_int_equal(p.resets, 1);
	assert_int_equal(p.avg_depth, 200);
	c.depth_area = b.depth_area + 400 * 100 * MS;
	assert_false(fab_telem_update(&p, &c));
	assert_false(p.reset);
	assert_int_equal(p.resets, 1);
	assert_int_equal(p.avg_depth, 400);
	/* any one counter going back is enough */
	c = p.last;
	c.mono_ns += 100 * MS;
	c.ecn_marked = 0;
	p.last.ecn_marked = 5;
	assert_true(fab_telem_update(&p, &c));
	assert_int_equal(p.resets, 2);
}

/* Counters from another map (maps made anew) are a reset even when they
 * are already past the old ones. */
static void test_telem_reset_new_map(void **state)
{
	struct fab_telem_port p = {0};
	struct fab_telem_read a = rd(1000, 1000, 0), b = rd(1100, 2000000, 0);

	(void)state;
	fab_telem_update(&p, &a);
	b.map_id = 8;
	assert_true(fab_telem_update(&p, &b));
	assert_int_equal(p.resets, 1);
}

/* The integral read a little back without any counter going back (the
 * reader drains the queue by its own arithmetic) is no reset: mean 0. */
static void test_telem_area_jitter(void **state)
{
	struct fab_telem_port p = {0};
	struct fab_telem_read a = rd(1000, 1000000, 10), b = rd(1100, 1000000, 0);

	(void)state;
	fab_telem_update(&p, &a);
	b.depth_area = a.depth_area - 3;
	assert_false(fab_telem_update(&p, &b));
	assert_int_equal(p.avg_depth, 0);
	assert_int_equal(p.resets, 0);
}

/* A reading without counters (the port is gone) moves the sequence only;
 * the next with counters measures from the last that had them. */
static void test_telem_gap(void **state)
{
	struct fab_telem_port p = {0};
	struct fab_telem_read a = rd(1000, 1000000, 0),
			      gone = {.mono_ns = 1100 * MS,
				      .wall_ms = 5,
				      .oper = FAB_OPER_NOT_PRESENT},
			      b = rd(1300, 1300000, 0);
	struct fab_telem_field f[FAB_TELEM_MAX_FIELDS];
	int n;

	(void)state;
	fab_telem_update(&p, &a);
	assert_false(fab_telem_update(&p, &gone));
	assert_int_equal(p.seq, 2);
	n = fab_telem_fields(&p, &gone, f);
	assert_string_equal(field(f, n, "oper-status"), "NOT_PRESENT");
	assert_string_equal(field(f, n, "admin-status"), "DOWN");
	assert_null(field(f, n, "out-octets"));
	assert_string_equal(field(f, n, "resets"), "0");
	b.depth_area = a.depth_area + 700 * 300 * MS;
	assert_false(fab_telem_update(&p, &b));
	assert_int_equal(p.seq, 3);
	assert_int_equal(p.dt_ns, 300 * MS);
	assert_int_equal(p.avg_depth, 700);
}

/* The record: every field once, OpenConfig's names, the values. */
static void test_telem_fields(void **state)
{
	struct fab_telem_port p = {0};
	struct fab_telem_read a = rd(1000, 1000000, 0), b = rd(1100, 1500000, 0);
	struct fab_telem_field f[FAB_TELEM_MAX_FIELDS];
	int n;

	(void)state;
	fab_telem_update(&p, &a);
	b.ecn_marked = 12;
	b.tail_drops = 3;
	b.wred_drops = 1;
	b.injected_drops = 2;
	b.depth = 4500;
	b.peak_depth = 9000;
	b.depth_area = a.depth_area + 1000 * 100 * MS;
	b.oper = FAB_OPER_DOWN;
	fab_telem_update(&p, &b);
	n = fab_telem_fields(&p, &b, f);
	assert_true(n <= FAB_TELEM_MAX_FIELDS);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			assert_string_not_equal(f[i].name, f[j].name);
	assert_string_equal(field(f, n, "seq"), "2");
	assert_string_equal(field(f, n, "ts_ms"), "1700000001100");
	assert_string_equal(field(f, n, "dt_ms"), "100.000");
	assert_string_equal(field(f, n, "admin-status"), "UP");
	assert_string_equal(field(f, n, "oper-status"), "DOWN");
	assert_string_equal(field(f, n, "out-octets"), "1500000");
	assert_string_equal(field(f, n, "out-pkts"), "1500");
	assert_string_equal(field(f, n, "out-discards"), "6");
	assert_string_equal(field(f, n, "dropped-pkts"), "4");
	assert_string_equal(field(f, n, "injected-drops"), "2");
	assert_string_equal(field(f, n, "ecn-marked-pkts"), "12");
	assert_string_equal(field(f, n, "queue-len"), "4500");
	assert_string_equal(field(f, n, "max-queue-len"), "9000");
	assert_string_equal(field(f, n, "avg-queue-len"), "1000");
	assert_non_null(field(f, n, "depth-area-bns"));
	assert_string_equal(field(f, n, "resets"), "0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_telem_interval),
		cmocka_unit_test(test_telem_reset_backwards),
		cmocka_unit_test(test_telem_reset_new_map),
		cmocka_unit_test(test_telem_area_jitter),
		cmocka_unit_test(test_telem_gap),
		cmocka_unit_test(test_telem_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
