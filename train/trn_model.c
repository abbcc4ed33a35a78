// SPDX-License-Identifier: Apache-2.0
/*
 * trn_model: model description files (see trn.h) and the per-layer FLOP
 * and byte counts the planner and ice-train share.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "trn.h"

struct model_text {
	char name[TRN_NAME_MAX];
	int64_t global_batch, micro_batch, bucket_kb;
};

static const struct ice_cfg_field model_fields[] = {
	{.key = "name",
	 .type = ICE_CFG_STRING,
	 .offset = offsetof(struct model_text, name),
	 .size = TRN_NAME_MAX,
	 .help = "model name"},
	{.key = "global_batch",
	 .type = ICE_CFG_INT,
	 .offset = offsetof(struct model_text, global_batch),
	 .min = 1,
	 .max = 1 << 24,
	 .help = "samples per training step"},
	{.key = "micro_batch",
	 .type = ICE_CFG_INT,
	 .offset = offsetof(struct model_text, micro_batch),
	 .min = 1,
	 .max = 1 << 24,
	 .help = "samples per micro-batch"},
	{.key = "bucket_kb",
	 .type = ICE_CFG_INT,
	 .offset = offsetof(struct model_text, bucket_kb),
	 .min = 1,
	 .max = 1 << 22,
	 .help = "DP all-reduce bucket, KiB"},
};

struct layer_text {
	int64_t in, out, count;
};

static const struct ice_cfg_field layer_fields[] = {
	{.key = "in",
	 .type = ICE_CFG_INT,
	 .offset = offsetof(struct layer_text, in),
	 .min = 1,
	 .max = 1 << 20,
	 .help = "input features"},
	{.key = "out",
	 .type = ICE_CFG_INT,
	 .offset = offsetof(struct layer_text, out),
	 .min = 1,
	 .max = 1 << 20,
	 .help = "output features"},
	{.key = "count",
	 .type = ICE_CFG_INT,
	 .offset = offsetof(struct layer_text, count),
	 .min = 1,
	 .max = TRN_MAX_LAYERS,
	 .help = "repetitions of this layer"},
};

static int load_layers(struct trn_model *m, const struct ice_yaml_doc *doc,
		       const struct ice_yaml_node *seq, struct ice_cfg_err *err)
{
	if (ice_yaml_kind(seq) != ICE_YAML_SEQ || ice_yaml_len(seq) == 0) {
		ice_cfg_errf(err, doc, seq, "model.layers",
			     "expected a non-empty list of {in, out, count}");
		return -EINVAL;
	}
	for (size_t i = 0; i < ice_yaml_len(seq); i++) {
		const struct ice_yaml_node *ln = ice_yaml_at(seq, i);
		struct layer_text lt = {.count = 1};
		char key[64];
		int ret;

		snprintf(key, sizeof(key), "model.layers[%zu]", i);
		ret = ice_cfg_bind(doc, ln, key, layer_fields,
				   sizeof(layer_fields) / sizeof(layer_fields[0]), &lt,
				   ICE_CFG_STRICT, err);
		if (ret < 0)
			return ret;
		if (ice_yaml_get(ln, "in") == NULL || ice_yaml_get(ln, "out") == NULL) {
			ice_cfg_errf(err, doc, ln, key,
				     "missing required key '%s' (a layer is {in, out[, count]})",
				     ice_yaml_get(ln, "in") == NULL ? "in" : "out");
			return -EINVAL;
		}
		if (m->nlayers > 0 && lt.in != m->out[m->nlayers - 1]) {
			snprintf(key, sizeof(key), "model.layers[%zu].in", i);
			ice_cfg_errf(err, doc, ice_yaml_get(ln, "in"), key,
				     "expected the previous layer's out (%d), got %lld",
				     m->out[m->nlayers - 1], (long long)lt.in);
			return -EINVAL;
		}
		if (m->nlayers + lt.count > TRN_MAX_LAYERS) {
			snprintf(key, sizeof(key), "model.layers[%zu]%s", i,
				 ice_yaml_get(ln, "count") != NULL ? ".count" : "");
			ice_cfg_errf(err, doc,
				     ice_yaml_get(ln, "count") != NULL ? ice_yaml_get(ln, "count")
								       : ln,
				     key, "expected at most %d layers in all, this makes %lld",
				     TRN_MAX_LAYERS, (long long)(m->nlayers + lt.count));
			return -E2BIG;
		}
		for (int64_t c = 0; c < lt.count; c++) {
			m->in[m->nlayers] = (int)lt.in;
			m->out[m->nlayers] = (int)lt.out;
			m->nlayers++;
			/* a stack: repeating a non-square layer breaks the chain */
			if (c > 0 && lt.in != lt.out) {
				snprintf(key, sizeof(key), "model.layers[%zu].count", i);
				ice_cfg_errf(err, doc, ice_yaml_get(ln, "count"), key,
					     "expected 1 for a layer with in != out (%lld != "
					     "%lld), got %lld",
					     (long long)lt.in, (long long)lt.out,
					     (long long)lt.count);
				return -EINVAL;
			}
		}
	}
	return 0;
}

int trn_model_load(const char *path, struct trn_model *m, struct ice_cfg_err *err)
{
	static const char *const keys[] = {"name", "global_batch", "micro_batch", "bucket_kb",
					   "layers"};
	static const char *const req[] = {"global_batch", "micro_batch", "layers"};
	struct ice_yaml_doc *doc = ice_yaml_load_file(path, err);
	const struct ice_yaml_node *root, *mn;
	struct model_text mt = {.name = "model", .bucket_kb = 4096};
	int ret = -EINVAL;

	if (doc == NULL)
		return errno == ENOENT ? -ENOENT : -EINVAL;
	memset(m, 0, sizeof(*m));
	root = ice_yaml_root(doc);
	if (ice_yaml_kind(root) != ICE_YAML_MAP) {
		ice_cfg_errf(err, doc, root, "", "expected a mapping with 'model'");
		goto out;
	}
	for (size_t i = 0; i < ice_yaml_len(root); i++) {
		const char *k = ice_yaml_scalar(ice_yaml_key_at(root, i));

		if (strcmp(k, "model") != 0) {
			ice_cfg_errf(err, doc, ice_yaml_key_at(root, i), k,
				     "unknown key; expected 'model'");
			goto out;
		}
	}
	mn = ice_yaml_get(root, "model");
	if (mn == NULL || ice_yaml_kind(mn) != ICE_YAML_MAP) {
		ice_cfg_errf(err, doc, mn != NULL ? mn : root, "model",
			     "expected a mapping with name, global_batch, micro_batch, "
			     "bucket_kb, layers");
		goto out;
	}
	for (size_t i = 0; i < ice_yaml_len(mn); i++) {
		const struct ice_yaml_node *kn = ice_yaml_key_at(mn, i);
		bool known = false;
		char key[160];

		for (size_t j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
			known = known || strcmp(ice_yaml_scalar(kn), keys[j]) == 0;
		if (!known) {
			snprintf(key, sizeof(key), "model.%s", ice_yaml_scalar(kn));
			ice_cfg_errf(err, doc, kn, key,
				     "unknown key; expected one of: name, global_batch, "
				     "micro_batch, bucket_kb, layers");
			goto out;
		}
	}
	for (size_t j = 0; j < sizeof(req) / sizeof(req[0]); j++) {
		char key[64];

		if (ice_yaml_get(mn, req[j]) == NULL) {
			snprintf(key, sizeof(key), "model.%s", req[j]);
			ice_cfg_errf(err, doc, mn, key, "missing required key '%s'", req[j]);
			goto out;
		}
	}
	/* the scalars; 'layers' is checked above and read below */
	ret = ice_cfg_bind(doc, mn, "model", model_fields,
			   sizeof(model_fields) / sizeof(model_fields[0]), &mt, 0, err);
	if (ret < 0)
		goto out;
	ret = -EINVAL;
	if (mt.global_batch % mt.micro_batch != 0) {
		ice_cfg_errf(err, doc, ice_yaml_get(mn, "global_batch"), "model.global_batch",
			     "expected a multiple of micro_batch (%lld), got %lld",
			     (long long)mt.micro_batch, (long long)mt.global_batch);
		goto out;
	}
	if (!ice_cfg_name_ok(mt.name)) {
		ice_cfg_errf(err, doc, ice_yaml_get(mn, "name"), "model.name",
			     "expected a name of letters, digits, '.', '-', '_', got '%s'",
			     mt.name);
		goto out;
	}
	ret = load_layers(m, doc, ice_yaml_get(mn, "layers"), err);
	if (ret < 0)
		goto out;
	snprintf(m->name, sizeof(m->name), "%s", mt.name);
	m->global_batch = (int)mt.global_batch;
	m->micro_batch = (int)mt.micro_batch;
	m->bucket_kb = (int)mt.bucket_kb;
	ret = 0;
out:
	ice_yaml_free(doc);
	return ret;
}

double trn_layer_fwd_flops(const struct trn_model *m, int l)
{
	return 2.0 * m->in[l] * m->out[l];
}

double trn_layer_bwd_flops(const struct trn_model *m, int l)
{
	return 4.0 * m->in[l] * m->out[l];
}

double trn_layer_param_bytes(const struct trn_model *m, int l)
{
	return 4.0 * m->in[l] * m->out[l];
}

double trn_layer_act_bytes(const struct trn_model *m, int l)
{
	return 4.0 * m->out[l];
}

int trn_model_widest(const struct trn_model *m)
{
	int f = 1;

	for (int l = 0; l < m->nlayers; l++) {
		f = m->in[l] > f ? m->in[l] : f;
		f = m->out[l] > f ? m->out[l] : f;
	}
	return f;
}

double trn_model_param_bytes(const struct trn_model *m)
{
	double b = 0;

	for (int l = 0; l < m->nlayers; l++)
		b += trn_layer_param_bytes(m, l);
	return b;
}

double trn_update_s(const struct trn_profile *d, double param_bytes)
{
	return d->mem_gbps > 0 ? TRN_SGD_TRAFFIC * param_bytes / (d->mem_gbps * 1e9) : 0;
}

const char *trn_optim_name(int o)
{
	return o == TRN_OPTIM_REPLICATED ? "replicated" : "sharded";
}

const char *trn_grad_name(int g)
{
	return g == TRN_GRAD_BF16 ? "bf16" : "fp32";
}

double trn_grad_wire_share(const struct trn_model *m)
{
	double g = m->grad == TRN_GRAD_BF16 ? 0.5 : 1.0;
	double w = m->param == TRN_GRAD_BF16 ? 0.5 : 1.0;

	return m->optim == TRN_OPTIM_REPLICATED ? g : (g + w) / 2;
}

double trn_grad_cvt_share(const struct trn_model *m, double share)
{
	double c = 0;

	if (m->optim == TRN_OPTIM_REPLICATED)
		return m->grad == TRN_GRAD_BF16 ? 2 : 0;
	if (m->grad == TRN_GRAD_BF16)
		c += 1 + share;
	if (m->param == TRN_GRAD_BF16)
		c += share + 1;
	return c;
}

int trn_optim_parse(const char *name)
{
	if (name != NULL && strcmp(name, "sharded") == 0)
		return TRN_OPTIM_SHARDED;
	if (name != NULL && strcmp(name, "replicated") == 0)
		return TRN_OPTIM_REPLICATED;
	return -EINVAL;
}
