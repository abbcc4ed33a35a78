// SPDX-License-Identifier: Apache-2.0
/*
 * trn models: layers with count expansion, the per-layer FLOP and byte
 * counts of trn.h, the example model, and refusals with file:line:key.
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

#include "trn.h"
#include "trn_test_util.h"

static struct trn_model m;

static void test_good(void **state)
{
	struct ice_cfg_err err;
	char buf[768];

	if (trn_model_load(trn_fixture("model_good.yaml"), &m, &err) < 0)
		fail_msg("%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
	assert_string_equal(m.name, "mlp-test");
	assert_int_equal(m.nlayers, 5);
	assert_int_equal(m.global_batch, 32);
	assert_int_equal(m.micro_batch, 4);
	assert_int_equal(m.bucket_kb, 4096); /* default */
	assert_int_equal(m.in[0], 64);
	assert_int_equal(m.out[0], 128);
	for (int l = 1; l <= 3; l++) {
		assert_int_equal(m.in[l], 128);
		assert_int_equal(m.out[l], 128);
	}
	assert_int_equal(m.in[4], 128);
	assert_int_equal(m.out[4], 10);
	/* per sample: fwd 2*in*out, bwd 4*in*out, grad 4*in*out B, act 4*out B */
	assert_true(trn_layer_fwd_flops(&m, 0) == 2.0 * 64 * 128);
	assert_true(trn_layer_bwd_flops(&m, 0) == 4.0 * 64 * 128);
	assert_true(trn_layer_param_bytes(&m, 4) == 4.0 * 128 * 10);
	assert_true(trn_layer_act_bytes(&m, 4) == 40.0);
	assert_true(trn_model_param_bytes(&m) == 4.0 * (64 * 128 + 3 * 128 * 128 + 128 * 10));
}

static void test_example(void **state)
{
	struct ice_cfg_err err;
	char buf[768];

	if (trn_model_load(trn_example("models/mlp.yaml"), &m, &err) < 0)
		fail_msg("%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
	assert_true(m.nlayers >= 2);
	assert_int_equal(m.global_batch % m.micro_batch, 0);
}

static void test_max_layers(void **state)
{
	struct ice_cfg_err err;

	/* 1000 + 24 = TRN_MAX_LAYERS fits; one more (the fixture adds 25) does not */
	assert_int_equal(trn_model_load(trn_fixture("model_bad_many.yaml"), &m, &err), -E2BIG);
	assert_int_equal(err.line, 6);
	assert_string_equal(err.key, "model.layers[1].count");
	assert_non_null(strstr(err.msg, "at most 1024"));
}

struct bad_case {
	const char *file;
	int line;
	const char *key;
	const char *expect;
};

static void test_errors(void **state)
{
	static const struct bad_case cases[] = {
		{"model_bad_batch.yaml", 3, "model.global_batch", "multiple of micro_batch (4)"},
		{"model_bad_chain.yaml", 6, "model.layers[1].in", "previous layer's out (16)"},
		{"model_bad_key.yaml", 5, "model.layers[0].cout", "unknown key"},
		{"model_bad_missing.yaml", 2, "model.micro_batch", "missing required key"},
		{"model_bad_top.yaml", 6, "model.learning_rate", "unknown key"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		struct ice_cfg_err err;
		char buf[768];
		int ret;

		memset(&err, 0, sizeof(err));
		ret = trn_model_load(trn_fixture(c->file), &m, &err);
		ice_cfg_err_str(&err, buf, sizeof(buf));
		print_message("%s -> %s\n", c->file, buf);
		assert_true(ret < 0);
		assert_non_null(strstr(err.file, c->file));
		assert_int_equal(err.line, c->line);
		assert_string_equal(err.key, c->key);
		assert_non_null(strstr(err.msg, c->expect));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_max_layers),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
