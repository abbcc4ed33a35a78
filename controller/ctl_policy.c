// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_policy.c: the operator's DCQCN policy (YAML).
 *
 *   baseline: ../fabric/dcqcn-testbed.yaml  # optional: what unset keys of a
 *                             #  profile take (ice_dcqcn_load(); relative to
 *                             #  the policy's directory); else ConnectX defaults
 *   profiles:                 # name -> DCQCN parameters (ice_dcqcn_fields(),
 *     testbed: {rp_ai_rate: 1, ...}   #  safe ranges); unset keys: the baseline
 *     roce: {priority: 3, dscp: 26, ...}  # optional, together: the priority
 *                             #  whose DCQCN a NIC sets to the profile and the
 *                             #  DSCP that steers a QP there (plans: tclass =
 *                             #  dscp << 2, prio); one priority, one profile
 *   rules:                    # first match wins; absent keys match anything
 *     - {op: all_reduce, min_bytes: 1M, max_bytes: 1G, comm: 7, tclass: 3,
 *        profile: testbed}
 *   default: testbed          # when no rule matches (required)
 */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

struct rule_text {
	char op[32];
	uint64_t min_bytes, max_bytes;
	uint64_t comm;
	uint32_t tclass;
	char profile[CTL_NAME_MAX];
};

static const struct ice_cfg_field rule_fields[] = {
	{.key = "op",
	 .type = ICE_CFG_STRING,
	 .offset = offsetof(struct rule_text, op),
	 .size = sizeof(((struct rule_text *)0)->op),
	 .help = "collective: any all_reduce reduce_scatter all_gather all_to_all broadcast "
		 "send_recv"},
	{.key = "min_bytes",
	 .type = ICE_CFG_SIZE,
	 .offset = offsetof(struct rule_text, min_bytes),
	 .min = 0,
	 .max = 1.8e19,
	 .help = "smallest message size that matches"},
	{.key = "max_bytes",
	 .type = ICE_CFG_SIZE,
	 .offset = offsetof(struct rule_text, max_bytes),
	 .min = 0,
	 .max = 1.8e19,
	 .help = "largest message size that matches"},
	{.key = "comm",
	 .type = ICE_CFG_UINT,
	 .offset = offsetof(struct rule_text, comm),
	 .min = 0,
	 .max = 1.8e19,
	 .help = "communicator (collective) id"},
	{.key = "tclass",
	 .type = ICE_CFG_U32,
	 .offset = offsetof(struct rule_text, tclass),
	 .min = 0,
	 .max = 7,
	 .help = "traffic class 0..7"},
	{.key = "profile",
	 .type = ICE_CFG_STRING,
	 .offset = offsetof(struct rule_text, profile),
	 .size = CTL_NAME_MAX,
	 .help = "name of a profile"},
};

void ctl_policy_free(struct ctl_policy *p)
{
	if (p == NULL)
		return;
	free(p->profiles);
	free(p->rules);
	free(p);
}

static int find_profile(const struct ctl_policy *p, const char *name)
{
	for (uint32_t i = 0; i < p->nprofiles; i++)
		if (strcmp(p->profiles[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* A profile's text: its DCQCN parameters first, so that the offsets of
 * ice_dcqcn_fields() hold in it, then its class. */
struct profile_text {
	struct ice_dcqcn_params params;
	uint32_t priority, dscp;
};

#define PROFILE_FIELDS_MAX 32

/* ice_dcqcn_fields() and the two class keys; the count. */
static size_t profile_fields(struct ice_cfg_field *out)
{
	size_t nf;
	const struct ice_cfg_field *f = ice_dcqcn_fields(&nf);

	memcpy(out, f, nf * sizeof(*f));
	out[nf++] = (struct ice_cfg_field){
		.key = "priority",
		.type = ICE_CFG_U32,
		.offset = offsetof(struct profile_text, priority),
		.min = 0,
		.max = ICE_PLAN_PRIO_MAX,
		.help = "802.1p priority 0-7 whose DCQCN a NIC sets to this profile (with dscp)"};
	out[nf++] = (struct ice_cfg_field){
		.key = "dscp",
		.type = ICE_CFG_U32,
		.offset = offsetof(struct profile_text, dscp),
		.min = 0,
		.max = 63,
		.help = "DSCP 0-63 that steers a QP into priority (traffic class dscp << 2)"};
	return nf;
}

/* One priority, one profile: two profiles on a priority must hold the same
 * parameters (the NIC has one set per priority), and a DSCP names one
 * priority. */
static int check_classes(const struct ctl_policy *p, const struct ice_yaml_doc *doc,
			 const struct ice_yaml_node *map, struct ice_cfg_err *err)
{
	for (uint32_t i = 0; i < p->nprofiles; i++) {
		const struct ctl_profile *a = &p->profiles[i];
		const struct ice_yaml_node *v = ice_yaml_at(map, i);
		char key[128];

		for (uint32_t j = 0; a->has_class && j < i; j++) {
			const struct ctl_profile *b = &p->profiles[j];

			if (!b->has_class)
				continue;
			if (b->prio == a->prio &&
			    memcmp(&a->params, &b->params, sizeof(a->params)) != 0) {
				snprintf(key, sizeof(key), "profiles.%s.priority", a->name);
				ice_cfg_errf(err, doc, ice_yaml_get(v, "priority"), key,
					     "priority %u is profile %s's (line %d) with other "
					     "DCQCN parameters; a NIC holds one set per priority: "
					     "expected another priority or the same parameters",
					     a->prio, b->name, b->line);
				return -EINVAL;
			}
			if (b->dscp == a->dscp && b->prio != a->prio) {
				snprintf(key, sizeof(key), "profiles.%s.dscp", a->name);
				ice_cfg_errf(err, doc, ice_yaml_get(v, "dscp"), key,
					     "DSCP %u steers into priority %u for profile %s (line "
					     "%d); expected one priority per DSCP",
					     a->dscp, b->prio, b->name, b->line);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int load_profiles(struct ctl_policy *p, const struct ice_yaml_doc *doc,
			 const struct ice_yaml_node *map, struct ice_cfg_err *err)
{
	struct ice_cfg_field fields[PROFILE_FIELDS_MAX];
	size_t nf = profile_fields(fields), n = ice_yaml_len(map);

	if (map == NULL || ice_yaml_kind(map) != ICE_YAML_MAP || n == 0) {
		ice_cfg_errf(err, doc, map, "profiles",
			     "expected a mapping of profile names to DCQCN parameters");
		return -EINVAL;
	}
	p->profiles = calloc(n, sizeof(*p->profiles));
	if (p->profiles == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ice_yaml_node *k = ice_yaml_key_at(map, i), *v = ice_yaml_at(map, i);
		struct ctl_profile *pr = &p->profiles[i];
		struct profile_text pt = {.params = p->baseline};
		const struct ice_yaml_node *prn, *dn;
		const char *name = ice_yaml_scalar(k);
		char key[128];
		int ret;

		snprintf(key, sizeof(key), "profiles.%s", name);
		if (strlen(name) == 0 || strlen(name) >= CTL_NAME_MAX) {
			ice_cfg_errf(err, doc, k, key, "expected a name of 1 to %d characters",
				     CTL_NAME_MAX - 1);
			return -EINVAL;
		}
		snprintf(pr->name, sizeof(pr->name), "%s", name);
		pr->line = ice_yaml_line(k);
		ret = ice_cfg_bind(doc, v, key, fields, nf, &pt, ICE_CFG_STRICT, err);
		if (ret < 0)
			return ret;
		pr->params = pt.params;
		prn = ice_yaml_get(v, "priority");
		dn = ice_yaml_get(v, "dscp");
		if ((prn == NULL) != (dn == NULL)) {
			char fk[160];

			snprintf(fk, sizeof(fk), "%s.%s", key, prn == NULL ? "priority" : "dscp");
			ice_cfg_errf(err, doc, prn != NULL ? prn : dn, fk,
				     "expected priority and dscp together (the priority whose "
				     "DCQCN is this profile's, and the DSCP that steers QPs "
				     "into it)");
			return -EINVAL;
		}
		pr->has_class = prn != NULL;
		pr->prio = (uint8_t)pt.priority;
		pr->dscp = (uint8_t)pt.dscp;
		ret = ice_dcqcn_params_check(&pr->params, err);
		if (ret < 0) {
			char msg[sizeof(err->msg)], fk[320];
			const struct ice_yaml_node *at = ice_yaml_get(v, err->key);

			snprintf(msg, sizeof(msg), "%s", err->msg);
			snprintf(fk, sizeof(fk), "%s.%s", key, err->key);
			ice_cfg_errf(err, doc, at != NULL ? at : k, fk, "%s", msg);
			return ret;
		}
		p->nprofiles++;
	}
	return check_classes(p, doc, map, err);
}

static int load_rules(struct ctl_policy *p, const struct ice_yaml_doc *doc,
		      const struct ice_yaml_node *seq, struct ice_cfg_err *err)
{
	size_t n = ice_yaml_len(seq);

	if (seq == NULL)
		return 0;
	if (ice_yaml_kind(seq) != ICE_YAML_SEQ) {
		ice_cfg_errf(err, doc, seq, "rules", "expected a list of rules");
		return -EINVAL;
	}
	p->rules = calloc(n + 1, sizeof(*p->rules));
	if (p->rules == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ice_yaml_node *m = ice_yaml_at(seq, i), *pn;
		struct rule_text rt = {.op = "any", .max_bytes = UINT64_MAX};
		struct ctl_rule *r = &p->rules[i];
		char key[64];
		int op, prof, ret;

		snprintf(key, sizeof(key), "rules[%zu]", i);
		ret = ice_cfg_bind(doc, m, key, rule_fields,
				   sizeof(rule_fields) / sizeof(rule_fields[0]), &rt,
				   ICE_CFG_STRICT, err);
		if (ret < 0)
			return ret;
		r->line = ice_yaml_line(m);
		op = ctl_coll_op_parse(rt.op);
		if (op < 0) {
			snprintf(key, sizeof(key), "rules[%zu].op", i);
			ice_cfg_errf(err, doc, ice_yaml_get(m, "op"), key,
				     "expected one of any, all_reduce, reduce_scatter, all_gather, "
				     "all_to_all, broadcast, send_recv; got '%s'",
				     rt.op);
			return -EINVAL;
		}
		if (rt.min_bytes > rt.max_bytes) {
			snprintf(key, sizeof(key), "rules[%zu].max_bytes", i);
			ice_cfg_errf(err, doc, ice_yaml_get(m, "max_bytes"), key,
				     "expected at least min_bytes (%llu)",
				     (unsigned long long)rt.min_bytes);
			return -EINVAL;
		}
		pn = ice_yaml_get(m, "profile");
		prof = pn != NULL ? find_profile(p, rt.profile) : -1;
		if (prof < 0) {
			snprintf(key, sizeof(key), "rules[%zu].profile", i);
			ice_cfg_errf(err, doc, pn != NULL ? pn : m, key,
				     pn != NULL ? "expected the name of a profile, got '%s'"
						: "expected a profile name (required)%s",
				     pn != NULL ? rt.profile : "");
			return -EINVAL;
		}
		r->op = (enum ctl_coll_op)op;
		r->min_bytes = rt.min_bytes;
		r->max_bytes = rt.max_bytes;
		r->has_comm = ice_yaml_get(m, "comm") != NULL;
		r->comm = rt.comm;
		r->has_tclass = ice_yaml_get(m, "tclass") != NULL;
		r->tclass = rt.tclass;
		r->profile = (uint32_t)prof;
		p->nrules++;
	}
	return 0;
}

/* The `baseline:` file (bn; NULL: none) into p->baseline; a relative path
 * from dir (NULL: the current directory). */
static int load_baseline(struct ctl_policy *p, const struct ice_yaml_doc *doc,
			 const struct ice_yaml_node *bn, const char *dir, struct ice_cfg_err *err)
{
	const char *s = ice_yaml_scalar(bn);
	int n, ret;

	ice_dcqcn_params_default(&p->baseline);
	if (bn == NULL)
		return 0;
	if (s == NULL || s[0] == '\0') {
		ice_cfg_errf(err, doc, bn, "baseline",
			     "expected the path of a DCQCN parameter file (relative to the "
			     "policy's directory)");
		return -EINVAL;
	}
	if (s[0] == '/' || dir == NULL)
		n = snprintf(p->baseline_file, sizeof(p->baseline_file), "%s", s);
	else
		n = snprintf(p->baseline_file, sizeof(p->baseline_file), "%s/%s", dir, s);
	if (n < 0 || (size_t)n >= sizeof(p->baseline_file)) {
		ice_cfg_errf(err, doc, bn, "baseline", "expected a path of at most %zu characters",
			     sizeof(p->baseline_file) - 1);
		return -EINVAL;
	}
	ret = ice_dcqcn_load(p->baseline_file, &p->baseline, err);
	if (ret < 0 && ret != -EINVAL)
		/* not there, not readable: say where the policy names it */
		ice_cfg_errf(err, doc, bn, "baseline",
			     "expected a readable DCQCN parameter file; cannot read '%s': %s",
			     p->baseline_file, strerror(-ret));
	/* -EINVAL: err names the baseline file's line and key */
	return ret;
}

static struct ctl_policy *policy_from_doc(struct ice_yaml_doc *doc, const char *dir,
					  struct ice_cfg_err *err)
{
	const struct ice_yaml_node *root = ice_yaml_root(doc), *dn;
	struct ctl_policy *p = calloc(1, sizeof(*p));
	int ret = -EINVAL, prof;

	if (p == NULL) {
		ret = -ENOMEM;
		goto err;
	}
	if (ice_yaml_kind(root) != ICE_YAML_MAP) {
		ice_cfg_errf(err, doc, root, "",
			     "expected a mapping with baseline, profiles, rules, default");
		goto err;
	}
	for (size_t i = 0; i < ice_yaml_len(root); i++) {
		const char *k = ice_yaml_scalar(ice_yaml_key_at(root, i));

		if (strcmp(k, "baseline") != 0 && strcmp(k, "profiles") != 0 &&
		    strcmp(k, "rules") != 0 && strcmp(k, "default") != 0) {
			ice_cfg_errf(err, doc, ice_yaml_key_at(root, i), k,
				     "unknown key; expected one of: baseline, profiles, rules, "
				     "default");
			goto err;
		}
	}
	ret = load_baseline(p, doc, ice_yaml_get(root, "baseline"), dir, err);
	if (ret < 0)
		goto err;
	ret = load_profiles(p, doc, ice_yaml_get(root, "profiles"), err);
	if (ret < 0)
		goto err;
	ret = load_rules(p, doc, ice_yaml_get(root, "rules"), err);
	if (ret < 0)
		goto err;
	dn = ice_yaml_get(root, "default");
	prof = dn != NULL && ice_yaml_scalar(dn) != NULL ? find_profile(p, ice_yaml_scalar(dn))
							 : -1;
	if (prof < 0) {
		ice_cfg_errf(err, doc, dn != NULL ? dn : root, "default",
			     "expected the name of a profile%s%s%s",
			     dn != NULL && ice_yaml_scalar(dn) != NULL ? ", got '" : " (required)",
			     dn != NULL && ice_yaml_scalar(dn) != NULL ? ice_yaml_scalar(dn) : "",
			     dn != NULL && ice_yaml_scalar(dn) != NULL ? "'" : "");
		ret = -EINVAL;
		goto err;
	}
	p->default_profile = (uint32_t)prof;
	ice_yaml_free(doc);
	return p;
err:
	ice_yaml_free(doc);
	ctl_policy_free(p);
	errno = -ret;
	return NULL;
}

struct ctl_policy *ctl_policy_load(const char *path, struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc = ice_yaml_load_file(path, err);
	struct ctl_policy *p;
	char *copy;
	int saved;

	if (doc == NULL)
		return NULL;
	copy = strdup(path);
	if (copy == NULL) {
		ice_yaml_free(doc);
		errno = ENOMEM;
		return NULL;
	}
	p = policy_from_doc(doc, dirname(copy), err);
	saved = errno;
	free(copy);
	errno = saved;
	return p;
}

struct ctl_policy *ctl_policy_load_string(const char *name, const char *yaml, size_t len,
					  const char *dir, struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc = ice_yaml_load_string(name, yaml, len, err);

	return doc != NULL ? policy_from_doc(doc, dir, err) : NULL;
}

const struct ctl_profile *ctl_policy_match(const struct ctl_policy *p, enum ctl_coll_op op,
					   uint64_t msg_bytes, uint64_t comm, uint32_t tclass)
{
	int r = ctl_policy_rule(p, op, msg_bytes, comm, tclass);

	return &p->profiles[r >= 0 ? p->rules[r].profile : p->default_profile];
}

int ctl_policy_rule(const struct ctl_policy *p, enum ctl_coll_op op, uint64_t msg_bytes,
		    uint64_t comm, uint32_t tclass)
{
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct ctl_rule *r = &p->rules[i];

		if (r->op != CTL_COLL_ANY && r->op != op)
			continue;
		if (msg_bytes < r->min_bytes || msg_bytes > r->max_bytes)
			continue;
		if (r->has_comm && r->comm != comm)
			continue;
		if (r->has_tclass && r->tclass != tclass)
			continue;
		return (int)i;
	}
	return -1;
}
