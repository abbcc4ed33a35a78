// SPDX-License-Identifier: Apache-2.0
/* Unit tests for common/ice_time: duration/size/rate parsers and clocks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "ice_time.h"

struct parse_case {
	const char *text;
	int ret;
	uint64_t val;
};

static void check_duration(const struct parse_case *c, size_t n, uint64_t unit)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0xdeadbeef;
		int ret = ice_parse_duration(c[i].text, unit, &v);

		if (ret != c[i].ret || (ret == 0 && v != c[i].val))
			fail_msg("duration '%s' (unit %llu): ret %d val %llu, want %d %llu",
				 c[i].text, (unsigned long long)unit, ret, (unsigned long long)v,
				 c[i].ret, (unsigned long long)c[i].val);
		if (ret != 0 && v != 0xdeadbeef)
			fail_msg("duration '%s': output written on error", c[i].text);
	}
}

static void test_duration_good(void **state)
{
	static const struct parse_case cases[] = {
		{"300us", 0, 300000},
		{"4ms", 0, 4000000},
		{"2s", 0, 2000000000},
		{"1500ns", 0, 1500},
		{"0", 0, 0},
		{"0s", 0, 0},
		{"7", 0, 7000}, /* bare: in the default unit (us here) */
		{"10MS", 0, 10000000},
		{"1S", 0, 1000000000},
		{"18446744073709551615ns", 0, UINT64_MAX},
		{"18446744073s", 0, 18446744073000000000ull},
	};

	(void)state;
	check_duration(cases, sizeof(cases) / sizeof(cases[0]), ICE_NSEC_PER_USEC);
}

static void test_duration_bare_units(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(ice_parse_duration("12", 1, &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(ice_parse_duration("12", ICE_NSEC_PER_MSEC, &v), 0);
	assert_int_equal(v, 12 * ICE_NSEC_PER_MSEC);
	assert_int_equal(ice_parse_duration("12", ICE_NSEC_PER_SEC, &v), 0);
	assert_int_equal(v, 12 * ICE_NSEC_PER_SEC);
}

static void test_duration_bad(void **state)
{
	static const struct parse_case cases[] = {
		{"", -EINVAL, 0},
		{"ms", -EINVAL, 0},
		{"-5ms", -EINVAL, 0},
		{"+5ms", -EINVAL, 0},
		{" 5ms", -EINVAL, 0},
		{"5 ms", -EINVAL, 0},
		{"5ms ", -EINVAL, 0},
		{"1.5ms", -EINVAL, 0},
		{"5min", -EINVAL, 0},
		{"5h", -EINVAL, 0},
		{"0x10", -EINVAL, 0},
		{"fast", -EINVAL, 0},
		{"18446744074s", -ERANGE, 0},
		{"18446744073709552ms", -ERANGE, 0},
		{"18446744073709551616ns", -ERANGE, 0},
		{"99999999999999999999999", -ERANGE, 0},
		{"18446744073709552", -ERANGE, 0}, /* bare, x1000 overflows */
	};
	uint64_t v;

	(void)state;
	check_duration(cases, sizeof(cases) / sizeof(cases[0]), ICE_NSEC_PER_USEC);
	assert_int_equal(ice_parse_duration(NULL, 1, &v), -EINVAL);
}

static void check_u64(int (*fn)(const char *, uint64_t *), const char *what,
		      const struct parse_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0xdeadbeef;
		int ret = fn(c[i].text, &v);

		if (ret != c[i].ret || (ret == 0 && v != c[i].val))
			fail_msg("%s '%s': ret %d val %llu, want %d %llu", what, c[i].text, ret,
				 (unsigned long long)v, c[i].ret, (unsigned long long)c[i].val);
	}
}

static void test_size(void **state)
{
	static const struct parse_case cases[] = {
		{"512", 0, 512},
		{"0", 0, 0},
		{"2b", 0, 2},
		{"4K", 0, 4096},
		{"4k", 0, 4096},
		{"1kb", 0, 1024},
		{"1KiB", 0, 1024},
		{"64M", 0, 64ull << 20},
		{"3MiB", 0, 3ull << 20},
		{"1G", 0, 1ull << 30},
		{"2gib", 0, 2ull << 30},
		{"17179869183G", 0, 17179869183ull << 30},
		{"18446744073709551615", 0, UINT64_MAX},
		{"17179869184G", -ERANGE, 0},
		{"18014398509481984K", -ERANGE, 0},
		{"18446744073709551616", -ERANGE, 0},
		{"1T", -EINVAL, 0},
		{"1.5G", -EINVAL, 0},
		{"-1", -EINVAL, 0},
		{"", -EINVAL, 0},
		{"K", -EINVAL, 0},
		{"4 K", -EINVAL, 0},
		{"big", -EINVAL, 0},
	};
	uint64_t v;

	(void)state;
	check_u64(ice_parse_size, "size", cases, sizeof(cases) / sizeof(cases[0]));
	assert_int_equal(ice_parse_size(NULL, &v), -EINVAL);
}

static void test_rate(void **state)
{
	static const struct parse_case cases[] = {
		{"200mbit", 0, 200000000ull},
		{"10gbit", 0, 10000000000ull},
		{"400Gbit", 0, 400000000000ull},
		{"100000kbit", 0, 100000000ull},
		{"5bit", 0, 5},
		{"5bps", 0, 5},
		{"1000", 0, 1000},
		{"18446744073gbit", 0, 18446744073000000000ull},
		{"18446744074gbit", -ERANGE, 0},
		{"18446744073709552kbit", -ERANGE, 0},
		{"10mb", -EINVAL, 0},
		{"10 gbit", -EINVAL, 0},
		{"1.5gbit", -EINVAL, 0},
		{"-1gbit", -EINVAL, 0},
		{"gbit", -EINVAL, 0},
		{"fast", -EINVAL, 0},
		{"", -EINVAL, 0},
	};
	uint64_t v;

	(void)state;
	check_u64(ice_parse_rate, "rate", cases, sizeof(cases) / sizeof(cases[0]));
	assert_int_equal(ice_parse_rate(NULL, &v), -EINVAL);
}

static void test_now_monotonic(void **state)
{
	uint64_t prev = ice_now_ns(), t0, t1;

	(void)state;
	assert_true(prev > 0);
	for (int i = 0; i < 100000; i++) {
		uint64_t now = ice_now_ns();

		assert_true(now >= prev);
		prev = now;
	}
	t0 = ice_now_ns();
	ice_sleep_ns(2 * ICE_NSEC_PER_MSEC);
	t1 = ice_now_ns();
	assert_true(t1 - t0 >= 2 * ICE_NSEC_PER_MSEC);
	/* Some time after 2020-01-01, in milliseconds. */
	assert_true(ice_wall_ms() > 1577836800000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_good), cmocka_unit_test(test_duration_bare_units),
		cmocka_unit_test(test_duration_bad),  cmocka_unit_test(test_size),
		cmocka_unit_test(test_rate),	      cmocka_unit_test(test_now_monotonic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
