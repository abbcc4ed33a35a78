// SPDX-License-Identifier: Apache-2.0
/*
 * controller plans: canonical JSON, HMAC-SHA256 sign/verify round trip, and
 * every refusal with its reason: tampered value, wrong key, old epoch,
 * expired lifetime, out-of-range values; key files with loose modes or
 * short keys.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl.h"

#define NOW 1700000000000ull

static char dir[] = "/tmp/ice-ctl-sign-XXXXXX";

static const char *write_key(const char *name, const char *text, mode_t mode)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void make_plan(struct ice_host_plan *hp)
{
	memset(hp, 0, sizeof(*hp));
	snprintf(hp->host, sizeof(hp->host), "h1");
	hp->epoch = 7;
	hp->lifetime_ms = 5000;
	hp->issued_ms = NOW;
	hp->n = 2;
	hp->entries = calloc(2, sizeof(*hp->entries));
	assert_non_null(hp->entries);
	for (uint32_t i = 0; i < 2; i++) {
		hp->entries[i].qpn = 0x100 + i;
		hp->entries[i].sport = (uint16_t)(50000 + i);
		hp->entries[i].start_mbps = 47;
		hp->entries[i].target_mbps = 50;
		hp->entries[i].path = (int32_t)i;
		hp->entries[i].has_dcqcn = true;
		ice_dcqcn_params_default(&hp->entries[i].dcqcn);
	}
	hp->entries[1].dcqcn.rp_ai_rate = 1;
}

static void load_key(struct ice_plan_key *k, const char *text)
{
	struct ice_cfg_err err;

	assert_int_equal(ice_plan_key_load(write_key("k", text, 0600), k, &err), 0);
}

static int verify(const char *json, const struct ice_plan_key *k, uint64_t last, uint64_t now,
		  struct ice_cfg_err *err)
{
	struct ice_host_plan out;
	int ret = ice_plan_verify(json, k, last, now, &out, err);

	ice_host_plan_fini(&out);
	return ret;
}

static void test_round_trip(void **state)
{
	struct ice_host_plan hp, out;
	struct ice_cfg_err err;
	struct ice_plan_key k;
	char *js;

	load_key(&k, "0123456789abcdef0123456789abcdef\n");
	assert_int_equal(k.len, 32);
	make_plan(&hp);
	js = ice_plan_sign(&hp, &k);
	assert_non_null(js);
	/* canonical: compact, sorted keys */
	assert_non_null(strstr(js, "{\"plan\":{\"entries\":[{\"dcqcn\":{\"enable\":1,"));
	assert_null(strstr(js, ", "));
	assert_int_equal(ice_plan_verify(js, &k, 6, NOW + 1, &out, &err), 0);
	assert_string_equal(out.host, "h1");
	assert_int_equal(out.epoch, 7);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.entries[1].sport, 50001);
	assert_true(out.entries[1].has_dcqcn);
	assert_int_equal(out.entries[1].dcqcn.rp_ai_rate, 1);
	ice_host_plan_fini(&out);
	free(js);
	/* an entry without DCQCN parameters: no "dcqcn" (the QP keeps its own) */
	hp.entries[1].has_dcqcn = false;
	js = ice_plan_sign(&hp, &k);
	assert_non_null(js);
	assert_null(strstr(strstr(js, "\"qpn\":257"), "dcqcn"));
	assert_int_equal(ice_plan_verify(js, &k, 6, NOW + 1, &out, &err), 0);
	assert_true(out.entries[0].has_dcqcn);
	assert_false(out.entries[1].has_dcqcn);
	hp.entries[1].has_dcqcn = true;
	assert_int_equal(out.entries[0].start_mbps, 47);
	assert_memory_equal(&out.entries[0].dcqcn, &hp.entries[0].dcqcn,
			    sizeof(struct ice_dcqcn_params));
	ice_host_plan_fini(&out);
	free(js);
	ice_host_plan_fini(&hp);
}

static void test_refusals(void **state)
{
	struct ice_host_plan hp;
	struct ice_cfg_err err;
	struct ice_plan_key k, k2;
	char *js, *bad, *at;

	load_key(&k, "0123456789abcdef0123456789abcdef");
	load_key(&k2, "0123456789abcdef0123456789abcdeX");
	make_plan(&hp);
	js = ice_plan_sign(&hp, &k);
	assert_non_null(js);

	/* tampered value: another source port */
	bad = strdup(js);
	at = strstr(bad, "\"sport\":50000");
	assert_non_null(at);
	at[strlen("\"sport\":5000")] = '7';
	assert_int_equal(verify(bad, &k, 0, NOW, &err), -EPERM);
	assert_string_equal(err.key, "sig");
	free(bad);
	/* tampered signature */
	bad = strdup(js);
	at = strstr(bad, "\"sig\":\"");
	at[7] = at[7] == '0' ? '1' : '0';
	assert_int_equal(verify(bad, &k, 0, NOW, &err), -EPERM);
	free(bad);
	/* wrong key */
	assert_int_equal(verify(js, &k2, 0, NOW, &err), -EPERM);
	assert_non_null(strstr(err.msg, "wrong key"));
	/* old epoch: equal and older */
	assert_int_equal(verify(js, &k, 7, NOW, &err), -ESTALE);
	assert_string_equal(err.key, "epoch");
	assert_int_equal(verify(js, &k, 9, NOW, &err), -ESTALE);
	/* expired */
	assert_int_equal(verify(js, &k, 0, NOW + 5000, &err), -ETIME);
	assert_string_equal(err.key, "lifetime_ms");
	assert_int_equal(verify(js, &k, 0, NOW + 4999, &err), 0);
	/* issued in the future beyond the clock-skew allowance (a replay
	 * prepared ahead, or a controller with a wrong clock) */
	assert_int_equal(verify(js, &k, 0, NOW - ICE_PLAN_SKEW_MS - 1, &err), -ETIME);
	assert_string_equal(err.key, "issued_ms");
	assert_non_null(strstr(err.msg, "future"));
	assert_int_equal(verify(js, &k, 0, NOW - ICE_PLAN_SKEW_MS, &err), 0);
	/* not JSON, not a plan */
	assert_int_equal(verify("{\"plan\":", &k, 0, NOW, &err), -EBADMSG);
	assert_int_equal(verify("{\"plan\":{},\"sig\":\"00\",\"x\":1}", &k, 0, NOW, &err),
			 -EBADMSG);
	free(js);

	/* out-of-range values, correctly signed: refused with the field */
	hp.entries[1].sport = 1000;
	js = ice_plan_sign(&hp, &k);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[1].sport");
	assert_non_null(strstr(err.msg, "[49152, 65535]"));
	free(js);
	hp.entries[1].sport = 50001;
	hp.entries[0].dcqcn.rp_gd = 40;
	js = ice_plan_sign(&hp, &k);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[0].dcqcn.rp_gd");
	free(js);
	hp.entries[0].dcqcn.rp_gd = 11;
	hp.entries[0].dcqcn.rp_max_rate = 10;
	hp.entries[0].dcqcn.rp_min_rate = 20;
	js = ice_plan_sign(&hp, &k);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[0].dcqcn.rp_min_rate");
	free(js);
	hp.entries[0].dcqcn.rp_min_rate = 1;
	hp.entries[0].target_mbps = 500000;
	js = ice_plan_sign(&hp, &k);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[0].target_mbps");
	free(js);
	hp.entries[0].target_mbps = 40; /* start 47 > target 40 */
	js = ice_plan_sign(&hp, &k);
	assert_int_equal(verify(js, &k, 0, NOW, &err), -ERANGE);
	assert_string_equal(err.key, "entries[0].start_mbps");
	free(js);
	ice_host_plan_fini(&hp);
}

static void test_key_files(void **state)
{
	struct ice_cfg_err err;
	struct ice_plan_key k;

	assert_int_equal(
		ice_plan_key_load(write_key("open", "0123456789abcdef0123", 0644), &k, &err),
		-EPERM);
	assert_non_null(strstr(err.msg, "group or others"));
	assert_int_equal(
		ice_plan_key_load(write_key("grp", "0123456789abcdef0123", 0640), &k, &err),
		-EPERM);
	assert_int_equal(ice_plan_key_load(write_key("short", "0123456789abcde\n", 0600), &k, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "at least 16"));
	assert_int_equal(ice_plan_key_load(write_key("ok", "0123456789abcdef", 0400), &k, &err), 0);
	assert_int_equal(k.len, 16);
	assert_int_equal(ice_plan_key_load("/nonexistent/ice.key", &k, &err), -ENOENT);
	/* owned by another user (not root): refused; needs root to chown */
	if (geteuid() == 0) {
		const char *p = write_key("foreign", "0123456789abcdef", 0600);

		assert_int_equal(chown(p, 12345, 12345), 0);
		assert_int_equal(ice_plan_key_load(p, &k, &err), -EPERM);
		assert_non_null(strstr(err.msg, "owned by uid 12345"));
	}
}

static void test_build_from_demand(void **state)
{
	struct topo_gen_opts o;
	struct topo *t;
	struct ctl_planner *p;
	struct ctl_demand d;
	struct ice_host_plan *hps;
	uint32_t nh, nics[4];
	struct ice_plan_key k;

	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	p = ctl_planner_new(t);
	for (int i = 0; i < 4; i++)
		nics[i] = topo_nic(t, (uint32_t)i * 2)->id;
	ctl_demand_init(&d, CTL_UNIT_BYTES);
	assert_int_equal(ctl_demand_add_collective(&d, t, CTL_COLL_ALL_REDUCE, 1 << 20, nics, 4, 2,
						   1, 0, 0x10),
			 0);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_equal(ctl_plan_sports(ctl_pathmap_model(p), &d), 0);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 0.95), 0);
	assert_int_equal(ctl_host_plans_build(t, &d, NULL, 3, 2000, NOW, &hps, &nh), 0);
	assert_int_equal(nh, 4);
	load_key(&k, "0123456789abcdef0123456789abcdef");
	for (uint32_t h = 0; h < nh; h++) {
		struct ice_host_plan out;
		struct ice_cfg_err err;
		char *js = ice_plan_sign(&hps[h], &k);

		assert_int_equal(hps[h].n, 2);
		assert_true(hps[h].entries[0].start_mbps > 0);
		/* DCQCN climbs back to the fair share, not past it */
		for (uint32_t i = 0; i < hps[h].n; i++)
			assert_int_equal(hps[h].entries[i].dcqcn.rp_max_rate,
					 hps[h].entries[i].target_mbps);
		assert_int_equal(ice_plan_verify(js, &k, 2, NOW, &out, &err), 0);
		ice_host_plan_fini(&out);
		free(js);
	}
	ctl_host_plans_free(hps, nh);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

static int setup(void **state)
{
	return mkdtemp(dir) == NULL ? -1 : 0;
}

/* every key file the tests wrote, whatever its name, then the folder */
static int teardown(void **state)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d != NULL)
		closedir(d);
	return rmdir(dir) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_key_files),
		cmocka_unit_test(test_build_from_demand),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
