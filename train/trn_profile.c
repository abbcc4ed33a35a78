// SPDX-License-Identifier: Apache-2.0
/*
 * trn_profile: device profile files (see trn.h). Strict: unknown keys,
 * missing name/kind/gflops, numbers <= 0 and unknown kinds are refused
 * with file:line, the key and what was expected.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "trn.h"

static const char *const kind_names[] = {"host", "cuda", "hip", NULL};

/* What a profile item binds to: the profile, with kind as an enum index. */
struct prof_text {
	struct trn_profile p;
	int kind;
};

#define PF(k, t, field, sz, h)                                                                     \
	{                                                                                          \
		.key = k, .type = t, .offset = offsetof(struct prof_text, field), .size = sz,      \
		.help = h                                                                          \
	}

static const struct ice_cfg_field prof_fields[] = {
	PF("name", ICE_CFG_STRING, p.name, TRN_NAME_MAX, "device profile name"),
	{.key = "kind",
	 .type = ICE_CFG_ENUM,
	 .offset = offsetof(struct prof_text, kind),
	 .choices = kind_names,
	 .help = "memory backend: host, cuda, hip"},
	PF("emulated", ICE_CFG_BOOL, p.emulated, 0, "speeds are stated, compute is padded"),
	PF("gflops", ICE_CFG_DOUBLE, p.gflops, 0, "fp32 GEMM throughput sustained, GFLOP/s"),
	PF("burst_gflops", ICE_CFG_DOUBLE, p.burst_gflops, 0,
	   "fp32 GEMM throughput in a short burst, GFLOP/s"),
	PF("pp_gflops", ICE_CFG_DOUBLE, p.pp_gflops, 0,
	   "fp32 GEMM throughput sustained in a pipeline stage's order, GFLOP/s"),
	PF("mem_gbps", ICE_CFG_DOUBLE, p.mem_gbps, 0, "device memory bandwidth, GB/s"),
	PF("h2d_gbps", ICE_CFG_DOUBLE, p.h2d_gbps, 0, "host to device copy, GB/s"),
	PF("d2h_gbps", ICE_CFG_DOUBLE, p.d2h_gbps, 0, "device to host copy, GB/s"),
	PF("reduce_gbps", ICE_CFG_DOUBLE, p.reduce_gbps, 0, "f32 sum reduce, GB/s of dst"),
	PF("mem_gib", ICE_CFG_DOUBLE, p.mem_gib, 0, "device memory a rank may use, GiB"),
	PF("source", ICE_CFG_STRING, p.source, sizeof(((struct trn_profile *)0)->source),
	   "where the figures come from"),
};
#define NPROF_FIELDS (sizeof(prof_fields) / sizeof(prof_fields[0]))

static const char *const required[] = {"name", "kind", "gflops"};

static int check_item(const struct ice_yaml_doc *doc, const struct ice_yaml_node *m,
		      const char *key, struct prof_text *t, const struct trn_profile *prev,
		      int nprev, struct ice_cfg_err *err)
{
	static const struct {
		const char *key;
		size_t off;
		const char *what;
	} nums[] = {
		{"gflops", offsetof(struct trn_profile, gflops), "GFLOP/s"},
		{"burst_gflops", offsetof(struct trn_profile, burst_gflops), "GFLOP/s"},
		{"pp_gflops", offsetof(struct trn_profile, pp_gflops), "GFLOP/s"},
		{"mem_gbps", offsetof(struct trn_profile, mem_gbps), "GB/s"},
		{"h2d_gbps", offsetof(struct trn_profile, h2d_gbps), "GB/s"},
		{"d2h_gbps", offsetof(struct trn_profile, d2h_gbps), "GB/s"},
		{"reduce_gbps", offsetof(struct trn_profile, reduce_gbps), "GB/s"},
		{"mem_gib", offsetof(struct trn_profile, mem_gib), "GiB"},
	};
	char fk[192];

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (ice_yaml_get(m, required[i]) == NULL) {
			snprintf(fk, sizeof(fk), "%s.%s", key, required[i]);
			ice_cfg_errf(err, doc, m, fk,
				     "missing required key '%s' (every device needs name, kind, "
				     "gflops)",
				     required[i]);
			return -EINVAL;
		}
	}
	if (!ice_cfg_name_ok(t->p.name)) {
		snprintf(fk, sizeof(fk), "%s.name", key);
		ice_cfg_errf(err, doc, ice_yaml_get(m, "name"), fk,
			     "expected a name of letters, digits, '.', '-', '_', got '%s'",
			     t->p.name);
		return -EINVAL;
	}
	for (int i = 0; i < nprev; i++) {
		if (strcmp(prev[i].name, t->p.name) == 0) {
			snprintf(fk, sizeof(fk), "%s.name", key);
			ice_cfg_errf(err, doc, ice_yaml_get(m, "name"), fk,
				     "expected a unique name, '%s' is already device %d", t->p.name,
				     i);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		const struct ice_yaml_node *v = ice_yaml_get(m, nums[i].key);
		double x = *(const double *)((const char *)&t->p + nums[i].off);

		if (v != NULL && !(x > 0 && x < 1e12)) {
			snprintf(fk, sizeof(fk), "%s.%s", key, nums[i].key);
			ice_cfg_errf(err, doc, v, fk, "expected a number > 0 (%s), got '%s'",
				     nums[i].what, ice_yaml_scalar(v));
			return -EINVAL;
		}
	}
	return 0;
}

int trn_profiles_load(const char *path, struct trn_profile *out, int max, struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc = ice_yaml_load_file(path, err);
	const struct ice_yaml_node *root, *seq;
	int ret = -EINVAL, n = 0;

	if (doc == NULL)
		return errno == ENOENT ? -ENOENT : -EINVAL;
	root = ice_yaml_root(doc);
	if (ice_yaml_kind(root) != ICE_YAML_MAP) {
		ice_cfg_errf(err, doc, root, "", "expected a mapping with 'devices'");
		goto out;
	}
	for (size_t i = 0; i < ice_yaml_len(root); i++) {
		const char *k = ice_yaml_scalar(ice_yaml_key_at(root, i));

		if (strcmp(k, "devices") != 0) {
			ice_cfg_errf(err, doc, ice_yaml_key_at(root, i), k,
				     "unknown key; expected 'devices'");
			goto out;
		}
	}
	seq = ice_yaml_get(root, "devices");
	if (seq == NULL || ice_yaml_kind(seq) != ICE_YAML_SEQ || ice_yaml_len(seq) == 0) {
		ice_cfg_errf(err, doc, seq != NULL ? seq : root, "devices",
			     "expected a non-empty list of device profiles");
		goto out;
	}
	for (size_t i = 0; i < ice_yaml_len(seq); i++) {
		const struct ice_yaml_node *m = ice_yaml_at(seq, i);
		struct prof_text t;
		char key[48];

		snprintf(key, sizeof(key), "devices[%zu]", i);
		if (n >= max) {
			ice_cfg_errf(err, doc, m, key, "expected at most %d device profiles", max);
			ret = -E2BIG;
			goto out;
		}
		memset(&t, 0, sizeof(t));
		snprintf(t.p.source, sizeof(t.p.source), "%s", "stated");
		ret = ice_cfg_bind(doc, m, key, prof_fields, NPROF_FIELDS, &t, ICE_CFG_STRICT, err);
		if (ret < 0)
			goto out;
		ret = check_item(doc, m, key, &t, out, n, err);
		if (ret < 0)
			goto out;
		snprintf(t.p.kind, sizeof(t.p.kind), "%s", kind_names[t.kind]);
		out[n++] = t.p;
	}
	ret = n;
out:
	ice_yaml_free(doc);
	return ret;
}

/* A double-quoted YAML scalar. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

/* path "-" writes to stdout. */
int trn_profiles_save(const char *path, const struct trn_profile *p, int n)
{
	bool out = strcmp(path, "-") == 0;
	FILE *f = out ? stdout : fopen(path, "w");
	int ret = 0;

	if (f == NULL)
		return -errno;
	fprintf(f, "# Device profiles (train/trn.h); written by ice-devprof.\n");
	fprintf(f, "devices:\n");
	for (int i = 0; i < n; i++) {
		const struct {
			const char *key;
			double v;
		} nums[] = {{"gflops", p[i].gflops},	       {"burst_gflops", p[i].burst_gflops},
			    {"pp_gflops", p[i].pp_gflops},     {"mem_gbps", p[i].mem_gbps},
			    {"h2d_gbps", p[i].h2d_gbps},       {"d2h_gbps", p[i].d2h_gbps},
			    {"reduce_gbps", p[i].reduce_gbps}, {"mem_gib", p[i].mem_gib}};

		fprintf(f, "  - name: %s\n", p[i].name);
		fprintf(f, "    kind: %s\n", p[i].kind);
		fprintf(f, "    emulated: %s\n", p[i].emulated ? "true" : "false");
		for (size_t j = 0; j < sizeof(nums) / sizeof(nums[0]); j++)
			if (nums[j].v > 0)
				fprintf(f, "    %s: %.6g\n", nums[j].key, nums[j].v);
		fprintf(f, "    source: ");
		put_quoted(f, p[i].source);
		fputc('\n', f);
	}
	if (fflush(f) != 0 || ferror(f))
		ret = -EIO;
	if (!out && fclose(f) != 0 && ret == 0)
		ret = -errno;
	return ret;
}

void trn_profiles_pp(struct trn_profile *p, int n)
{
	for (int i = 0; i < n; i++)
		if (p[i].pp_gflops > 0)
			p[i].gflops = p[i].pp_gflops;
}

int trn_profile_find(const struct trn_profile *p, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(p[i].name, name) == 0)
			return i;
	return -1;
}
