// SPDX-License-Identifier: Apache-2.0
/* ice-agent configuration: the YAML file, flags, and precise errors. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent.h"
#include "ice_time.h"

static const char *fixture(const char *name)
{
	static char path[512];
	const char *dir = getenv("ICE_AGENT_FIXTURES");

	snprintf(path, sizeof(path), "%s/%s", dir != NULL ? dir : "tests/host_agent", name);
	return path;
}

/* Load + finish a fixture; return the error text ("" when it loaded). */
static const char *load(const char *name, struct agent_cfg *c)
{
	static char buf[768];
	struct ice_cfg_err err;
	const char *path = fixture(name);

	agent_cfg_defaults(c);
	buf[0] = '\0';
	if (agent_cfg_load_file(c, path, &err) < 0 || agent_cfg_finish(c, path, &err) < 0)
		ice_cfg_err_str(&err, buf, sizeof(buf));
	return buf;
}

static void test_ok(void **state)
{
	struct agent_cfg c;

	assert_string_equal(load("ok.yaml", &c), "");
	assert_string_equal(c.nic, "lo");
	assert_string_equal(c.addr, "127.0.0.1");
	assert_int_equal(c.addr_be, htonl(0x7f000001));
	assert_string_equal(c.host, "node-1");
	assert_string_equal(c.fabric, "lab");
	assert_string_equal(c.redis, "unix:/tmp/ice-redis.sock");
	assert_int_equal(c.interval, 250 * ICE_NSEC_PER_MSEC);
	assert_int_equal(c.stream_cap, 500);
	assert_int_equal(c.buffer, 40);
	assert_int_equal(c.metrics_port, 9464);
	assert_string_equal(c.pin_dir, "/sys/fs/bpf/ice-agent-test");
	assert_true(c.no_bpf);
	assert_true(c.ifindex > 0);
}

static void test_defaults(void **state)
{
	struct agent_cfg c;
	struct ice_cfg_err err;

	agent_cfg_defaults(&c);
	assert_int_equal(agent_cfg_set_flag(&c, "nic", "lo", &err), 0);
	assert_int_equal(agent_cfg_finish(&c, NULL, &err), 0);
	assert_string_equal(c.addr, "127.0.0.1"); /* the NIC's first address */
	assert_string_equal(c.redis, "127.0.0.1:6379");
	assert_string_equal(c.fabric, "default");
	assert_string_equal(c.pin_dir, "/sys/fs/bpf/ice-agent-127.0.0.1");
	assert_string_equal(c.run_dir, "/run/ice");
	assert_int_equal(c.interval, ICE_NSEC_PER_SEC);
	assert_int_equal(c.stream_cap, 1000);
	assert_int_equal(c.buffer, 300);
	assert_int_equal(c.metrics_port, 0);
	assert_false(c.no_bpf);
	assert_true(c.host[0] != '\0');
}

static void test_flags(void **state)
{
	struct agent_cfg c;
	struct ice_cfg_err err;

	agent_cfg_defaults(&c);
	assert_int_equal(agent_cfg_set_flag(&c, "stream-cap", "77", &err), 0);
	assert_int_equal(c.stream_cap, 77);
	assert_int_equal(agent_cfg_set_flag(&c, "no-bpf", "true", &err), 0);
	assert_true(c.no_bpf);
	assert_int_equal(agent_cfg_set_flag(&c, "interval", "2", &err), 0);
	assert_int_equal(c.interval, 2 * ICE_NSEC_PER_SEC);
	assert_int_equal(agent_cfg_set_flag(&c, "redis-timeout", "50", &err), 0);
	assert_int_equal(c.redis_timeout, 50 * ICE_NSEC_PER_MSEC);
	assert_true(agent_cfg_set_flag(&c, "interval", "5ms", &err) < 0);
	assert_non_null(strstr(err.msg, "[10ms, 3600s]"));
	assert_int_equal(agent_cfg_set_flag(&c, "no-such-key", "1", &err), -ENOENT);
	assert_true(agent_cfg_set_flag(&c, "buffer", "0", &err) < 0);
	assert_non_null(strstr(err.msg, "expected an integer in [1, 1000000]"));
}

struct bad {
	const char *file;
	const char *want; /* substring of the error */
};

static const struct bad bads[] = {
	{"bad_interval.yaml", "bad_interval.yaml:2:11: key 'interval': expected a duration"},
	{"unknown_key.yaml", "unknown_key.yaml:2:1: key 'intervall': unknown key 'intervall'; did "
			     "you mean 'interval'?"},
	{"bad_redis.yaml", "bad_redis.yaml:2:8: key 'redis': expected host:port (port 1-65535), "
			   "unix:/path or cluster:host:port[,host:port...], got 'localhost'"},
	{"bad_addr.yaml", "bad_addr.yaml:2:7: key 'addr': expected an IPv4 address, got "
			  "'10.0.0.300'"},
	{"bad_port.yaml", "bad_port.yaml:2:15: key 'metrics_port': expected an integer in [0, "
			  "65535], got '70000'"},
	{"syntax_error.yaml", "syntax_error.yaml:3:"},
	{"missing_nic.yaml", "key 'nic': missing: expected the name of the network interface"},
	{"bad_fabric.yaml", "bad_fabric.yaml:2:9: key 'fabric': expected letters, digits"},
	{"bad_nic.yaml", "bad_nic.yaml:1:6: key 'nic': expected an existing network interface, "
			 "got 'icenonic0'"},
	{"bad_bool.yaml", "bad_bool.yaml:2:9: key 'no_bpf': expected a boolean"},
	{"renamed_key.yaml", "renamed_key.yaml:2:1: key 'plan_key': key 'plan_key' is now "
			     "'plan_pubkeys': plans are signed with Ed25519 now"},
};

static void test_bad_files(void **state)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct agent_cfg c;
		const char *got = load(bads[i].file, &c);

		if (strstr(got, bads[i].want) == NULL)
			fail_msg("%s: got '%s', want '%s'", bads[i].file, got, bads[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_bad_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
