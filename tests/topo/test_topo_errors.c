// SPDX-License-Identifier: Apache-2.0
/*
 * topo: every bad topology file in tests/topo/ gives an error that names the
 * file, the exact line, the key and what was expected. One fixture per case;
 * the directory comes from ICE_TOPO_FIXTURES (set by tests/meson.build).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topo.h"

struct bad_case {
	const char *file;
	int line;
	const char *key;
	const char *msg; /* a substring of the message */
};

static const struct bad_case cases[] = {
	{"missing_field.yaml", 7, "switches[2].tier", "missing required key 'tier'"},
	{"missing_links.yaml", 1, "links", "missing required key 'links'"},
	{"unknown_node.yaml", 15, "links[3].a", "unknown node 'leaf9'"},
	{"duplicate_name.yaml", 7, "switches[2].name",
	 "duplicate name 'leaf1' (first defined at line 6)"},
	{"duplicate_address.yaml", 10, "hosts[1].nics[0].addr",
	 "duplicate address 10.9.0.1/31 (first used at line 9)"},
	{"duplicate_loopback.yaml", 6, "switches[1].loopback", "duplicate address 10.255.0.1"},
	{"bad_rate_unit.yaml", 14, "links[2].rate", "expected a rate such as 200mbit"},
	{"disconnected.yaml", 10, "hosts[1]", "host h2 (NIC eth0 on leaf2) cannot reach host h1"},
	{"unknown_hash.yaml", 2, "hash.algorithm",
	 "expected one of: crc32, crc32c, crc16, crc16-ansi, xor, toeplitz; got 'crc64'"},
	{"unknown_hash_field.yaml", 2, "hash.fields", "unknown field 'vlan'"},
	{"tiers_not_adjacent.yaml", 14, "links[2]", "not in adjacent tiers"},
	{"pmax_range.yaml", 3, "defaults.ecn.pmax", "expected a number in [0, 1], got '1.5'"},
	{"kmin_gt_kmax.yaml", 13, "links[1].ecn", "expected kmin <= kmax"},
	{"unknown_key.yaml", 12, "links[0].rte", "unknown key 'rte'"},
	{"namespace_too_long.yaml", 5, "switches[0].name", "expected fewer than 32"},
	{"bad_nic_addr.yaml", 10, "hosts[1].nics[0].addr", "prefix /31 or /30"},
	{"nic_not_linked.yaml", 9, "hosts[0].nics[1]", "NIC eth1 of host h1 is not connected"},
	{"syntax_error.yaml", 7, "", "YAML syntax error"},
	{"duplicate_asn.yaml", 7, "switches[2].asn",
	 "AS 65010 of leaf2 (tier 1) is also leaf1's (tier 1, line 6); expected a unique AS"},
	{"reserved_asn.yaml", 5, "switches[0].asn", "AS 23456 of spine1 is reserved"},
	/* an explicit asn on a leaf that the top tier's assigned one takes */
	{"asn_spine_leaf.yaml", 7, "switches[2].asn",
	 "AS 65000 of leaf2 (tier 1) is also spine1's"},
};

static const char *fixture_dir(void)
{
	const char *d = getenv("ICE_TOPO_FIXTURES");

	return d != NULL ? d : "tests/topo";
}

static void test_ok_fixture_loads(void **state)
{
	struct ice_cfg_err err;
	char path[512];
	struct topo *t;

	(void)state;
	snprintf(path, sizeof(path), "%s/ok.yaml", fixture_dir());
	t = topo_load(path, &err);
	assert_non_null(t);
	assert_int_equal(t->nnodes, 5);
	assert_int_equal(t->nlinks, 4);
	topo_free(t);
}

static void test_bad_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		struct ice_cfg_err err;
		char path[512], buf[1024];
		struct topo *t;

		memset(&err, 0, sizeof(err));
		snprintf(path, sizeof(path), "%s/%s", fixture_dir(), c->file);
		errno = 0;
		t = topo_load(path, &err);
		ice_cfg_err_str(&err, buf, sizeof(buf));
		print_message("%-26s -> %s\n", c->file, buf);
		assert_null(t);
		assert_int_equal(errno, EINVAL);
		assert_string_equal(err.file, path);
		assert_int_equal(err.line, c->line);
		assert_string_equal(err.key, c->key);
		assert_non_null(strstr(err.msg, c->msg));
		/* the message says what was expected */
		assert_true(strstr(err.msg, "expected") != NULL ||
			    strstr(err.msg, "syntax") != NULL);
	}
}

static void test_missing_file(void **state)
{
	struct ice_cfg_err err;

	(void)state;
	assert_null(topo_load("/nonexistent/ice-topo.yaml", &err));
	assert_int_not_equal(errno, 0);
	assert_non_null(strstr(err.file, "ice-topo.yaml"));
}

static void test_string_errors(void **state)
{
	static const char text[] = "name: s\n"
				   "switches:\n"
				   "  - {name: leaf1, tier: 1}\n"
				   "hosts:\n"
				   "  - {name: h1, nics: [{name: eth0}]}\n"
				   "links:\n"
				   "  - {a: h1, b: leaf1}\n"
				   "  - {a: h1, b: leaf1}\n";
	struct ice_cfg_err err;

	(void)state;
	assert_null(topo_load_string("inline.yaml", text, strlen(text), &err));
	assert_string_equal(err.file, "inline.yaml");
	assert_int_equal(err.line, 8);
	assert_string_equal(err.key, "links[1].a");
	assert_non_null(strstr(err.msg, "no free NIC"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok_fixture_loads),
		cmocka_unit_test(test_bad_fixtures),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_string_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
