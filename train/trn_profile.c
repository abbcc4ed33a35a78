// SPDX-License-Identifier: Apache-2.0
/*
 * trn_profile: device profile files (see trn.h). Strict: unknown keys,
 * missing name/kind/gflops, numbers <= 0 and unknown kinds are refused
 * with file:line, the key and what was expected.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Keys of item m other than the bound fields and pp_gflops_at: errors. */
static int check_keys(const struct ice_yaml_doc *doc, const struct ice_yaml_node *m,
		      const char *key, struct ice_cfg_err *err)
{
	for (size_t i = 0; i < ice_yaml_len(m); i++) {
		const struct ice_yaml_node *kn = ice_yaml_key_at(m, i);
		const char *k = ice_yaml_scalar(kn);
		bool known = k != NULL && strcmp(k, "pp_gflops_at") == 0;
		char fk[192], list[320] = "";
		size_t off = 0;

		for (size_t j = 0; j < NPROF_FIELDS && !known; j++)
			known = k != NULL && strcmp(k, prof_fields[j].key) == 0;
		if (known)
			continue;
		for (size_t j = 0; j < NPROF_FIELDS && off < sizeof(list); j++)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s, ",
						prof_fields[j].key);
		snprintf(fk, sizeof(fk), "%s.%s", key, k != NULL ? k : "?");
		ice_cfg_errf(err, doc, kn, fk, "unknown key; expected one of: %spp_gflops_at",
			     list);
		return -EINVAL;
	}
	return 0;
}

/* pp_gflops_at: a mapping of micro-batch sizes (integers >= 1, each once)
 * to GFLOP/s (> 0), at most TRN_PP_AT_MAX of them. */
static int load_pp_at(const struct ice_yaml_doc *doc, const struct ice_yaml_node *m,
		      const char *key, struct trn_profile *p, struct ice_cfg_err *err)
{
	const struct ice_yaml_node *at = ice_yaml_get(m, "pp_gflops_at");
	char fk[192];

	if (at == NULL)
		return 0;
	snprintf(fk, sizeof(fk), "%s.pp_gflops_at", key);
	if (ice_yaml_kind(at) != ICE_YAML_MAP || ice_yaml_len(at) == 0 ||
	    ice_yaml_len(at) > TRN_PP_AT_MAX) {
		ice_cfg_errf(err, doc, at, fk,
			     "expected a mapping of 1 to %d micro-batch sizes to GFLOP/s, "
			     "e.g. {4: 28.4, 8: 32.0}",
			     TRN_PP_AT_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < ice_yaml_len(at); i++) {
		const char *ks = ice_yaml_scalar(ice_yaml_key_at(at, i));
		const char *vs = ice_yaml_scalar(ice_yaml_at(at, i));
		char *end = NULL;
		long mb = ks != NULL ? strtol(ks, &end, 10) : 0;
		double g = 0;

		if (ks == NULL || end == ks || *end != '\0' || mb < 1 || mb > INT32_MAX ||
		    trn_profile_pp_at(p, (int)mb) > 0) {
			ice_cfg_errf(err, doc, ice_yaml_key_at(at, i), fk,
				     "expected a micro-batch size (an integer >= 1, each once), "
				     "got '%s'",
				     ks != NULL ? ks : "(not a scalar)");
			return -EINVAL;
		}
		if (vs != NULL)
			g = strtod(vs, &end);
		if (vs == NULL || end == vs || *end != '\0' || !(g > 0 && g < 1e12)) {
			ice_cfg_errf(err, doc, ice_yaml_at(at, i), fk,
				     "expected GFLOP/s > 0 at micro-batch %ld, got '%s'", mb,
				     vs != NULL ? vs : "(not a scalar)");
			return -EINVAL;
		}
		trn_profile_pp_at_set(p, (int)mb, g);
	}
	return 0;
}

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
		ret = check_keys(doc, m, key, err);
		if (ret == 0)
			ret = ice_cfg_bind(doc, m, key, prof_fields, NPROF_FIELDS, &t, 0, err);
		if (ret == 0)
			ret = load_pp_at(doc, m, key, &t.p, err);
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
		for (int j = 0; j < p[i].npp_at; j++)
			fprintf(f, "%s%d: %.6g%s", j == 0 ? "    pp_gflops_at: {" : ", ",
				p[i].pp_at_mb[j], p[i].pp_at_gflops[j],
				j == p[i].npp_at - 1 ? "}\n" : "");
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

double trn_profile_pp_at(const struct trn_profile *p, int mb)
{
	for (int i = 0; i < p->npp_at; i++)
		if (p->pp_at_mb[i] == mb)
			return p->pp_at_gflops[i];
	return 0;
}

int trn_profile_pp_at_set(struct trn_profile *p, int mb, double gflops)
{
	int i = 0;

	while (i < p->npp_at && p->pp_at_mb[i] < mb)
		i++;
	if (i < p->npp_at && p->pp_at_mb[i] == mb) {
		p->pp_at_gflops[i] = gflops;
		return 0;
	}
	if (p->npp_at == TRN_PP_AT_MAX)
		return -E2BIG;
	memmove(&p->pp_at_mb[i + 1], &p->pp_at_mb[i], (size_t)(p->npp_at - i) * sizeof(int));
	memmove(&p->pp_at_gflops[i + 1], &p->pp_at_gflops[i],
		(size_t)(p->npp_at - i) * sizeof(double));
	p->pp_at_mb[i] = mb;
	p->pp_at_gflops[i] = gflops;
	p->npp_at++;
	return 0;
}

void trn_profiles_pp_at(struct trn_profile *p, int n, int mb)
{
	for (int i = 0; i < n; i++) {
		double g = trn_profile_pp_at(&p[i], mb);

		p[i].gflops = g > 0 ? g : p[i].pp_gflops > 0 ? p[i].pp_gflops : p[i].gflops;
	}
}

int trn_profile_find(const struct trn_profile *p, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(p[i].name, name) == 0)
			return i;
	return -1;
}
