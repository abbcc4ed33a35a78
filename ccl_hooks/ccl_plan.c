// SPDX-License-Identifier: Apache-2.0
/* ccl_plan: the verbs hook's plan file; see ccl_plan.h for the format. */
#include "ccl_plan.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccl_internal.h"
#include "ice_roce.h"

struct ccl_plan_rule {
	bool any;	    /* "*" */
	uint32_t remote_ip; /* network order */
	unsigned nports;
	uint16_t port[CCL_PLAN_MAX_PORTS];
	int16_t tclass[CCL_PLAN_MAX_PORTS]; /* -1: the "tclass" rule's */
	unsigned next;			    /* round-robin cursor (atomic) */
};

struct ccl_plan {
	int tclass;
	unsigned nrules;
	struct ccl_plan_rule rule[CCL_PLAN_MAX_RULES];
};

#define CCL_PLAN_MAX_BYTES (256 * 1024)

static bool ccl_plan_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno == 0 && *end == '\0' && *out >= min && *out <= max;
}

/* One line (NUL-terminated, comment stripped). 0 or -EINVAL with err set. */
static int ccl_plan_line(struct ccl_plan *p, char *line, bool *have_version, const char *name,
			 unsigned lineno, char *err, size_t errlen)
{
	char *save = NULL, *kw = strtok_r(line, " \t\r", &save), *tok;
	unsigned long v;

	if (kw == NULL)
		return 0;
	if (!*have_version) {
		tok = strtok_r(NULL, " \t\r", &save);
		if (strcmp(kw, "version") != 0 || tok == NULL || strcmp(tok, "1") != 0 ||
		    strtok_r(NULL, " \t\r", &save) != NULL) {
			snprintf(err, errlen, "%s:%u: expected \"version 1\" as the first rule",
				 name, lineno);
			return -EINVAL;
		}
		*have_version = true;
		return 0;
	}
	if (strcmp(kw, "tclass") == 0) {
		tok = strtok_r(NULL, " \t\r", &save);
		if (tok == NULL || !ccl_plan_uint(tok, 0, 255, &v) ||
		    strtok_r(NULL, " \t\r", &save) != NULL) {
			snprintf(err, errlen, "%s:%u: tclass: expected one integer in 0-255", name,
				 lineno);
			return -EINVAL;
		}
		p->tclass = (int)v;
		return 0;
	}
	if (strcmp(kw, "sport") == 0) {
		struct ccl_plan_rule *r;
		struct in_addr a;

		if (p->nrules == CCL_PLAN_MAX_RULES) {
			snprintf(err, errlen, "%s:%u: more than %d sport rules", name, lineno,
				 CCL_PLAN_MAX_RULES);
			return -EINVAL;
		}
		r = &p->rule[p->nrules];
		tok = strtok_r(NULL, " \t\r", &save);
		if (tok == NULL || (strcmp(tok, "*") != 0 && inet_pton(AF_INET, tok, &a) != 1)) {
			snprintf(err, errlen, "%s:%u: sport: expected a peer IPv4 address or *",
				 name, lineno);
			return -EINVAL;
		}
		r->any = strcmp(tok, "*") == 0;
		r->remote_ip = r->any ? 0 : a.s_addr;
		while ((tok = strtok_r(NULL, " \t\r", &save)) != NULL) {
			char *slash = strchr(tok, '/');
			unsigned long tc = 0;

			if (slash != NULL)
				*slash = '\0';
			if (r->nports == CCL_PLAN_MAX_PORTS ||
			    !ccl_plan_uint(tok, ICE_ROCE_SPORT_MIN, 65535, &v)) {
				snprintf(err, errlen,
					 "%s:%u: sport: \"%s\": expected at most %d ports in "
					 "49152-65535 (RoCEv2 source ports)",
					 name, lineno, tok, CCL_PLAN_MAX_PORTS);
				return -EINVAL;
			}
			if (slash != NULL && !ccl_plan_uint(slash + 1, 0, 255, &tc)) {
				snprintf(err, errlen,
					 "%s:%u: sport: \"%s/%.8s\": expected PORT/TCLASS with a "
					 "traffic class in 0-255",
					 name, lineno, tok, slash + 1);
				return -EINVAL;
			}
			r->tclass[r->nports] = slash != NULL ? (int16_t)tc : -1;
			r->port[r->nports++] = (uint16_t)v;
		}
		if (r->nports == 0) {
			snprintf(err, errlen, "%s:%u: sport: expected at least one port", name,
				 lineno);
			return -EINVAL;
		}
		p->nrules++;
		return 0;
	}
	snprintf(err, errlen, "%s:%u: unknown rule \"%.32s\" (expected tclass or sport)", name,
		 lineno, kw);
	return -EINVAL;
}

struct ccl_plan *ccl_plan_parse(const char *text, const char *name, char *err, size_t errlen)
{
	struct ccl_plan *p = NULL;
	bool have_version = false;
	char *copy = NULL, *line, *save = NULL;
	unsigned lineno = 0;
	size_t len;

	err[0] = '\0';
	len = text != NULL ? strnlen(text, CCL_PLAN_MAX_BYTES + 1) : 0;
	if (text == NULL || len > CCL_PLAN_MAX_BYTES || memchr(text, '\0', len) != NULL) {
		snprintf(err, errlen, "%s: missing or larger than %d bytes", name,
			 CCL_PLAN_MAX_BYTES);
		errno = EINVAL;
		return NULL;
	}
	p = ccl_alloc(sizeof(*p));
	copy = ccl_alloc(len + 1);
	if (p == NULL || copy == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		goto err_nomem;
	}
	memset(p, 0, sizeof(*p));
	p->tclass = -1;
	memcpy(copy, text, len + 1);
	/* strtok_r would merge empty lines and lose line numbers: split by hand */
	for (line = copy; line != NULL; line = save) {
		char *nl = strchr(line, '\n'), *hash;

		save = nl != NULL ? nl + 1 : NULL;
		if (nl != NULL)
			*nl = '\0';
		lineno++;
		hash = strchr(line, '#');
		if (hash != NULL)
			*hash = '\0';
		if (ccl_plan_line(p, line, &have_version, name, lineno, err, errlen) < 0)
			goto err_inval;
	}
	if (!have_version) {
		snprintf(err, errlen, "%s: empty plan: expected \"version 1\"", name);
		goto err_inval;
	}
	free(copy);
	return p;

err_inval:
	free(copy);
	free(p);
	errno = EINVAL;
	return NULL;
err_nomem:
	free(copy);
	free(p);
	errno = ENOMEM;
	return NULL;
}

struct ccl_plan *ccl_plan_load(const char *path, char *err, size_t errlen)
{
	struct ccl_plan *p = NULL;
	char *buf = NULL;
	size_t n;
	FILE *f;

	err[0] = '\0';
	f = fopen(path, "re");
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	buf = ccl_alloc(CCL_PLAN_MAX_BYTES + 2);
	if (buf == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		fclose(f);
		errno = ENOMEM;
		return NULL;
	}
	n = fread(buf, 1, CCL_PLAN_MAX_BYTES + 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n > CCL_PLAN_MAX_BYTES || strlen(buf) != n) {
		snprintf(err, errlen, "%s: larger than %d bytes or not text", path,
			 CCL_PLAN_MAX_BYTES);
		errno = EINVAL;
	} else {
		p = ccl_plan_parse(buf, path, err, errlen);
	}
	free(buf);
	return p;
}

void ccl_plan_free(struct ccl_plan *p)
{
	free(p);
}

int ccl_plan_tclass(const struct ccl_plan *p)
{
	return p != NULL ? p->tclass : -1;
}

uint16_t ccl_plan_next_sport(struct ccl_plan *p, uint32_t remote_ip, int *tclass)
{
	struct ccl_plan_rule *any = NULL;
	unsigned at;

	if (tclass != NULL)
		*tclass = ccl_plan_tclass(p);
	if (p == NULL)
		return 0;
	for (unsigned i = 0; i < p->nrules; i++) {
		struct ccl_plan_rule *r = &p->rule[i];

		if (r->any) {
			if (any == NULL)
				any = r;
			continue;
		}
		if (r->remote_ip == remote_ip) {
			any = r;
			break;
		}
	}
	if (any == NULL)
		return 0;
	at = __atomic_fetch_add(&any->next, 1, __ATOMIC_RELAXED) % any->nports;
	if (tclass != NULL && any->tclass[at] >= 0)
		*tclass = any->tclass[at];
	return any->port[at];
}
