// SPDX-License-Identifier: Apache-2.0
/*
 * controller policy: profiles bound to ice_dcqcn_fields() with safe ranges,
 * over an optional baseline file, rules (first match wins), the default,
 * and every refusal naming its file:line and key. Fixtures in
 * tests/controller/.
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

#include "ctl.h"

static const char *fixture(const char *name)
{
	static char path[512];
	const char *dir = getenv("ICE_CTL_FIXTURES");

	snprintf(path, sizeof(path), "%s/%s", dir != NULL ? dir : "tests/controller", name);
	return path;
}

static void test_good_policy(void **state)
{
	struct ice_cfg_err err;
	struct ctl_policy *p = ctl_policy_load(fixture("good.yaml"), &err);
	const struct ctl_profile *pr;
	struct ice_dcqcn_params def;

	assert_non_null(p);
	assert_int_equal(p->nprofiles, 2);
	assert_int_equal(p->nrules, 3);
	ice_dcqcn_params_default(&def);
	pr = ctl_policy_match(p, CTL_COLL_ALL_TO_ALL, 100, 0, 0);
	assert_string_equal(pr->name, "gentle");
	assert_int_equal(pr->params.rp_ai_rate, 1);
	assert_int_equal(pr->params.rp_hai_rate, 10);
	assert_int_equal(pr->params.rp_time_reset, def.rp_time_reset); /* unset: default */
	pr = ctl_policy_match(p, CTL_COLL_ALL_REDUCE, 4 << 20, 0, 0);
	assert_string_equal(pr->name, "steady");
	assert_int_equal(pr->params.rp_gd, 9);
	/* too small for rule 2, no comm/tclass match: the default */
	pr = ctl_policy_match(p, CTL_COLL_ALL_REDUCE, 1024, 0, 0);
	assert_string_equal(pr->name, "steady");
	/* rule 3 needs both comm and tclass */
	assert_string_equal(ctl_policy_match(p, CTL_COLL_BROADCAST, 1, 42, 3)->name, "gentle");
	assert_string_equal(ctl_policy_match(p, CTL_COLL_BROADCAST, 1, 42, 2)->name, "steady");
	/* first match wins: an all-to-all on comm 42 tclass 3 hits rule 1 */
	assert_string_equal(ctl_policy_match(p, CTL_COLL_ALL_TO_ALL, 1 << 30, 42, 3)->name,
			    "gentle");
	ctl_policy_free(p);
}

/* profiles with a class: plans carry it for their QPs */
static void test_classes(void **state)
{
	static const char text[] = "profiles:\n"
				   "  roce: {rp_ai_rate: 1, priority: 3, dscp: 26}\n"
				   "  roce-too: {rp_ai_rate: 1, priority: 3, dscp: 24}\n"
				   "  bulk: {rp_gd: 9, priority: 1, dscp: 10}\n"
				   "  plain: {}\n"
				   "rules:\n"
				   "  - {op: all_to_all, profile: bulk}\n"
				   "  - {op: all_reduce, profile: roce-too}\n"
				   "default: roce\n";
	struct ice_cfg_err err;
	struct ctl_policy *p;
	const struct ctl_profile *pr;
	char buf[512];

	p = ctl_policy_load_string("classes.yaml", text, strlen(text), NULL, &err);
	if (p == NULL)
		fail_msg("%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
	/* two profiles on one priority with the same parameters: aliases */
	pr = ctl_policy_match(p, CTL_COLL_ALL_REDUCE, 1, 0, 0);
	assert_string_equal(pr->name, "roce-too");
	assert_true(pr->has_class);
	assert_int_equal(pr->prio, 3);
	assert_int_equal(pr->dscp, 24);
	pr = ctl_policy_match(p, CTL_COLL_ALL_TO_ALL, 1, 0, 0);
	assert_int_equal(pr->prio, 1);
	assert_int_equal(pr->dscp, 10);
	assert_int_equal(pr->params.rp_gd, 9);
	assert_false(p->profiles[3].has_class);
	ctl_policy_free(p);
}

static void test_example_policy(void **state)
{
	const char *path = getenv("ICE_CTL_EXAMPLE");
	const struct ctl_profile *pr;
	struct ice_dcqcn_params bed;
	struct ice_cfg_err err;
	struct ctl_policy *p;
	char buf[512];

	if (path == NULL)
		path = "controller/policy.example.yaml";
	p = ctl_policy_load(path, &err);
	if (p == NULL)
		fail_msg("%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
	assert_true(p->nprofiles >= 4);
	assert_string_equal(ctl_policy_match(p, CTL_COLL_ALL_TO_ALL, 1, 0, 0)->name,
			    "testbed-incast");
	assert_int_equal(
		ctl_policy_match(p, CTL_COLL_ALL_REDUCE, 8 << 20, 0, 0)->params.rp_max_rate, 100);
	for (uint32_t i = 0; i < p->nprofiles; i++)
		assert_int_equal(ice_dcqcn_params_check(&p->profiles[i].params, NULL), 0);
	/* testbed-100m is the bed's baseline file as it stands */
	assert_non_null(strstr(p->baseline_file, "fabric/dcqcn-testbed.yaml"));
	ice_dcqcn_params_default(&bed);
	assert_int_equal(ice_dcqcn_load(p->baseline_file, &bed, &err), 0);
	assert_memory_equal(&p->baseline, &bed, sizeof(bed));
	pr = ctl_policy_match(p, CTL_COLL_ALL_REDUCE, 8 << 20, 0, 0);
	assert_string_equal(pr->name, "testbed-100m");
	assert_memory_equal(&pr->params, &bed, sizeof(bed));
	assert_int_equal(pr->params.rp_dce_tcp_rtt, 1500);
	/* the bed's profiles each on a priority of their own */
	assert_true(pr->has_class);
	assert_int_equal(pr->prio, 3);
	assert_int_equal(pr->dscp, 26);
	/* the ConnectX profiles keep ConnectX's microsecond timers */
	for (uint32_t i = 0; i < p->nprofiles; i++)
		if (strncmp(p->profiles[i].name, "cx-", 3) == 0) {
			assert_int_equal(p->profiles[i].params.rp_dce_tcp_rtt, 1);
			assert_int_equal(p->profiles[i].params.np_min_time_between_cnps, 4);
			assert_int_equal(p->profiles[i].params.rp_rate_reduce_monitor_period, 4);
		}
	ctl_policy_free(p);
}

/* `baseline:` (relative to the policy's directory): unset keys of a
 * profile take its values, then ConnectX defaults; `{}` is the baseline. */
static void test_baseline(void **state)
{
	struct ice_dcqcn_params def, base;
	const struct ctl_profile *pr;
	struct ice_cfg_err err;
	struct ctl_policy *p;
	char buf[512], text[1024];

	p = ctl_policy_load(fixture("baseline.yaml"), &err);
	if (p == NULL)
		fail_msg("%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
	assert_non_null(strstr(p->baseline_file, "baseline_dcqcn.yaml"));
	ice_dcqcn_params_default(&def);
	base = def;
	base.rp_max_rate = 100;
	base.rp_ai_rate = 1;
	base.rp_time_reset = 4000;
	base.rp_dce_tcp_rtt = 1500;
	assert_memory_equal(&p->baseline, &base, sizeof(base));
	pr = ctl_policy_match(p, CTL_COLL_ALL_REDUCE, 1, 0, 0);
	assert_string_equal(pr->name, "bed");
	assert_memory_equal(&pr->params, &base, sizeof(base));
	pr = ctl_policy_match(p, CTL_COLL_ALL_TO_ALL, 1, 0, 0);
	assert_string_equal(pr->name, "tuned");
	assert_int_equal(pr->params.rp_ai_rate, 3);	  /* its own */
	assert_int_equal(pr->params.rp_time_reset, 4000); /* the baseline's */
	assert_int_equal(pr->params.rp_gd, def.rp_gd);	  /* neither: default */
	ctl_policy_free(p);

	/* no baseline: ConnectX defaults, no file */
	p = ctl_policy_load(fixture("good.yaml"), &err);
	assert_non_null(p);
	assert_string_equal(p->baseline_file, "");
	assert_memory_equal(&p->baseline, &def, sizeof(def));
	ctl_policy_free(p);

	/* from a string: an absolute path as given */
	snprintf(text, sizeof(text), "baseline: %s\nprofiles: {a: {}}\ndefault: a\n",
		 fixture("baseline_dcqcn.yaml"));
	p = ctl_policy_load_string("<policy>", text, strlen(text), NULL, &err);
	if (p == NULL)
		fail_msg("%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
	assert_memory_equal(&p->profiles[0].params, &base, sizeof(base));
	ctl_policy_free(p);
}

/* A baseline that is not there: the policy's line names it; a bad key in
 * it: the baseline file's line and key. */
static void test_bad_baseline(void **state)
{
	struct ice_cfg_err err;
	struct ctl_policy *p;
	char buf[512];

	memset(&err, 0, sizeof(err));
	p = ctl_policy_load(fixture("bad_baseline_missing.yaml"), &err);
	ice_cfg_err_str(&err, buf, sizeof(buf));
	if (p != NULL)
		fail_msg("bad_baseline_missing.yaml: accepted");
	assert_int_equal(errno, ENOENT);
	if (strstr(err.file, "bad_baseline_missing.yaml") == NULL || err.line != 4 ||
	    strcmp(err.key, "baseline") != 0 || strstr(err.msg, "no_such_dcqcn.yaml") == NULL ||
	    strstr(err.msg, "cannot read") == NULL)
		fail_msg("missing baseline: got '%s'", buf);

	memset(&err, 0, sizeof(err));
	p = ctl_policy_load(fixture("bad_baseline_key.yaml"), &err);
	ice_cfg_err_str(&err, buf, sizeof(buf));
	if (p != NULL)
		fail_msg("bad_baseline_key.yaml: accepted");
	assert_int_equal(errno, EINVAL);
	if (strstr(err.file, "bad_baseline_dcqcn.yaml") == NULL || err.line != 3 ||
	    strcmp(err.key, "rp_speed") != 0 || strstr(err.msg, "expected one of") == NULL)
		fail_msg("bad key in the baseline: got '%s'", buf);
}

struct bad_case {
	const char *file;
	int line;
	const char *key;
	const char *msg_part;
};

static const struct bad_case bad_cases[] = {
	{"bad_unknown_key.yaml", 4, "profiles.gentle.rp_speed", "expected one of"},
	{"bad_range.yaml", 5, "profiles.wild.rp_gd", "[1, 15]"},
	{"bad_cross.yaml", 4, "profiles.odd.rp_min_rate", "at most rp_max_rate"},
	{"bad_rule_profile.yaml", 5, "rules[1].profile", "'missing'"},
	{"bad_rule_op.yaml", 4, "rules[0].op", "'allreduce'"},
	{"bad_rule_key.yaml", 4, "rules[0].size", "expected one of"},
	{"bad_rule_sizes.yaml", 4, "rules[0].max_bytes", "at least min_bytes"},
	{"bad_tclass.yaml", 4, "rules[0].tclass", "7"},
	{"bad_default.yaml", 3, "default", "'fast'"},
	{"bad_no_default.yaml", 1, "default", "required"},
	{"bad_top_key.yaml", 4, "rule", "baseline, profiles, rules, default"},
	{"bad_baseline_type.yaml", 4, "baseline", "expected the path"},
	{"bad_class_prio.yaml", 3, "profiles.gentle.priority", "[0, 7]"},
	{"bad_class_dscp.yaml", 3, "profiles.gentle.dscp", "[0, 63]"},
	{"bad_class_half.yaml", 4, "profiles.steady.dscp", "priority and dscp together"},
	{"bad_class_shared.yaml", 5, "profiles.steady.priority",
	 "priority 3 is profile gentle's (line 3) with other DCQCN parameters"},
	{"bad_class_dscp_shared.yaml", 4, "profiles.steady.dscp",
	 "DSCP 26 steers into priority 3 for profile gentle"},
};

static void test_bad_policies(void **state)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct ice_cfg_err err;
		struct ctl_policy *p;
		char buf[512];

		memset(&err, 0, sizeof(err));
		p = ctl_policy_load(fixture(c->file), &err);
		ice_cfg_err_str(&err, buf, sizeof(buf));
		if (p != NULL)
			fail_msg("%s: accepted", c->file);
		assert_int_equal(errno, EINVAL);
		if (err.line != c->line || strcmp(err.key, c->key) != 0 ||
		    strstr(err.msg, c->msg_part) == NULL)
			fail_msg("%s: got '%s', expected line %d key '%s' msg ~ '%s'", c->file, buf,
				 c->line, c->key, c->msg_part);
		assert_non_null(strstr(err.file, c->file));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_policy),  cmocka_unit_test(test_example_policy),
		cmocka_unit_test(test_bad_policies), cmocka_unit_test(test_baseline),
		cmocka_unit_test(test_bad_baseline), cmocka_unit_test(test_classes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
