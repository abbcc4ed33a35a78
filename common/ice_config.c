// SPDX-License-Identifier: Apache-2.0
/*
 * ice_config: YAML documents with positions, and table-driven binding.
 *
 * A document is loaded with libyaml's document API, then mirrored into a
 * flat array of ice_yaml_node (one per libyaml node). Sequences and maps hold
 * pointers into that array, so an alias is simply a second pointer to the
 * anchored node: aliases are resolved without copying (and without the
 * "billion laughs" blow-up). Scalar text stays in the libyaml document, which
 * the ice_yaml_doc keeps until ice_yaml_free().
 *
 * After loading, one walk from the root checks what libyaml lets through but
 * a configuration must not contain: non-scalar keys, duplicate keys and
 * absurd nesting.
 */
#include "ice_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yaml.h>

#include "ice_log.h"
#include "ice_time.h"

#define ICE_YAML_MAX_DEPTH 64	       /* nesting levels a config may use */
#define ICE_YAML_MAX_FILE  (64u << 20) /* bytes ice_yaml_load_file reads */
#define ICE_CFG_KEY_MAX	   sizeof(((struct ice_cfg_err *)0)->key)

struct ice_yaml_node {
	enum ice_yaml_kind kind;
	int line;   /* 1-based */
	int column; /* 1-based */
	bool walked;
	const char *scalar; /* ICE_YAML_SCALAR: text owned by the libyaml document */
	size_t len;	    /* sequence items or map pairs */
	/* sequence: len items; map: 2 * len pointers, key then value */
	const struct ice_yaml_node **kids;
};

struct ice_yaml_doc {
	char *name;
	yaml_document_t ydoc;	     /* owns the scalar text */
	struct ice_yaml_node *nodes; /* one per libyaml node */
	const struct ice_yaml_node **kids;
	const struct ice_yaml_node *root;
	struct ice_yaml_node empty_root; /* root of an empty document */
};

/* ---- errors --------------------------------------------------------------- */

static void __attribute__((format(printf, 6, 0)))
err_vset(struct ice_cfg_err *err, const char *file, int line, int column, const char *key,
	 const char *fmt, va_list ap)
{
	if (err == NULL)
		return;
	snprintf(err->file, sizeof(err->file), "%s", file != NULL ? file : "");
	err->line = line;
	err->column = column;
	snprintf(err->key, sizeof(err->key), "%s", key != NULL ? key : "");
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

static void __attribute__((format(printf, 6, 7)))
err_set(struct ice_cfg_err *err, const char *file, int line, int column, const char *key,
	const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(err, file, line, column, key, fmt, ap);
	va_end(ap);
}

void ice_cfg_errf(struct ice_cfg_err *err, const struct ice_yaml_doc *doc,
		  const struct ice_yaml_node *n, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(err, doc != NULL ? doc->name : NULL, n != NULL ? n->line : 0,
		 n != NULL ? n->column : 0, key, fmt, ap);
	va_end(ap);
}

/* snprintf at *off into buf[len], never moving *off past the end. */
static void __attribute__((format(printf, 4, 5)))
buf_add(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	*off = (size_t)n >= len - *off ? len - 1 : *off + (size_t)n;
}

const char *ice_cfg_err_str(const struct ice_cfg_err *err, char *buf, size_t len)
{
	size_t off = 0;

	if (buf == NULL || len == 0)
		return "";
	buf[0] = '\0';
	if (err == NULL)
		return buf;
	if (err->file[0] != '\0')
		buf_add(buf, len, &off, "%s", err->file);
	if (err->line > 0) {
		buf_add(buf, len, &off, "%s%d", off > 0 ? ":" : "", err->line);
		if (err->column > 0)
			buf_add(buf, len, &off, ":%d", err->column);
	}
	if (off > 0)
		buf_add(buf, len, &off, ": ");
	if (err->key[0] != '\0')
		buf_add(buf, len, &off, "key '%s': ", err->key);
	buf_add(buf, len, &off, "%s", err->msg);
	return buf;
}

/* ---- loading -------------------------------------------------------------- */

static const char *kind_name(enum ice_yaml_kind kind)
{
	switch (kind) {
	case ICE_YAML_SCALAR:
		return "a scalar";
	case ICE_YAML_MAP:
		return "a mapping";
	case ICE_YAML_SEQ:
		return "a sequence";
	}
	return "?";
}

/* Report a libyaml parser failure (reader, scanner, parser or composer). */
static int parser_error(const yaml_parser_t *parser, const char *name, struct ice_cfg_err *err)
{
	const char *problem = parser->problem != NULL ? parser->problem : "unknown error";

	switch (parser->error) {
	case YAML_MEMORY_ERROR:
		err_set(err, name, 0, 0, NULL, "out of memory while parsing YAML");
		return -ENOMEM;
	case YAML_READER_ERROR:
		if (parser->problem_value != -1)
			err_set(err, name, 0, 0, NULL, "%s #%X at byte offset %zu", problem,
				parser->problem_value, parser->problem_offset);
		else
			err_set(err, name, 0, 0, NULL, "%s at byte offset %zu", problem,
				parser->problem_offset);
		return -EINVAL;
	default:
		break;
	}
	if (parser->context != NULL)
		err_set(err, name, (int)parser->problem_mark.line + 1,
			(int)parser->problem_mark.column + 1, NULL,
			"YAML syntax error: %s (%s at line %zu, column %zu)", problem,
			parser->context, parser->context_mark.line + 1,
			parser->context_mark.column + 1);
	else
		err_set(err, name, (int)parser->problem_mark.line + 1,
			(int)parser->problem_mark.column + 1, NULL, "YAML syntax error: %s",
			problem);
	return -EINVAL;
}

/* Mirror the libyaml document into doc->nodes / doc->kids. */
static int doc_build(struct ice_yaml_doc *doc)
{
	yaml_node_t *ystart = doc->ydoc.nodes.start;
	size_t nnodes = (size_t)(doc->ydoc.nodes.top - ystart);
	size_t nkids = 0, k = 0;

	for (size_t i = 0; i < nnodes; i++) {
		const yaml_node_t *y = &ystart[i];

		if (y->type == YAML_SEQUENCE_NODE)
			nkids +=
				(size_t)(y->data.sequence.items.top - y->data.sequence.items.start);
		else if (y->type == YAML_MAPPING_NODE)
			nkids += 2 *
				 (size_t)(y->data.mapping.pairs.top - y->data.mapping.pairs.start);
	}
	doc->nodes = calloc(nnodes > 0 ? nnodes : 1, sizeof(*doc->nodes));
	doc->kids = calloc(nkids > 0 ? nkids : 1, sizeof(*doc->kids));
	if (doc->nodes == NULL || doc->kids == NULL)
		return -ENOMEM;

	for (size_t i = 0; i < nnodes; i++) {
		const yaml_node_t *y = &ystart[i];
		struct ice_yaml_node *n = &doc->nodes[i];

		n->line = (int)y->start_mark.line + 1;
		n->column = (int)y->start_mark.column + 1;
		n->kids = &doc->kids[k];
		switch (y->type) {
		case YAML_SCALAR_NODE:
			n->kind = ICE_YAML_SCALAR;
			n->scalar = (const char *)y->data.scalar.value;
			break;
		case YAML_SEQUENCE_NODE:
			n->kind = ICE_YAML_SEQ;
			for (yaml_node_item_t *it = y->data.sequence.items.start;
			     it < y->data.sequence.items.top; it++) {
				/* libyaml node ids are 1-based */
				doc->kids[k++] = &doc->nodes[*it - 1];
				n->len++;
			}
			break;
		case YAML_MAPPING_NODE:
			n->kind = ICE_YAML_MAP;
			for (yaml_node_pair_t *p = y->data.mapping.pairs.start;
			     p < y->data.mapping.pairs.top; p++) {
				doc->kids[k++] = &doc->nodes[p->key - 1];
				doc->kids[k++] = &doc->nodes[p->value - 1];
				n->len++;
			}
			break;
		default:
			n->kind = ICE_YAML_SCALAR;
			n->scalar = "";
			break;
		}
	}
	doc->root = nnodes > 0 ? &doc->nodes[0] : NULL;
	return 0;
}

/* Extend the dotted key path in buf (which holds base_len chars). */
static void path_join(char *buf, size_t len, size_t base_len, const char *key)
{
	snprintf(buf + base_len, len - base_len, "%s%s", base_len > 0 ? "." : "", key);
}

struct key_ref {
	const char *key;
	size_t idx;
};

static int key_ref_cmp(const void *a, const void *b)
{
	const struct key_ref *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Reject duplicate keys in map n (keys already known to be scalars). */
static int map_check_dups(const struct ice_yaml_doc *doc, const struct ice_yaml_node *n,
			  const char *path, struct ice_cfg_err *err)
{
	struct key_ref *refs;
	size_t dup = SIZE_MAX, first = 0;

	if (n->len < 2)
		return 0;
	refs = malloc(n->len * sizeof(*refs));
	if (refs == NULL) {
		ice_cfg_errf(err, doc, n, path, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n->len; i++) {
		refs[i].key = n->kids[2 * i]->scalar;
		refs[i].idx = i;
	}
	qsort(refs, n->len, sizeof(*refs), key_ref_cmp);
	/* Report the duplicate that comes first in the file. */
	for (size_t i = 1; i < n->len; i++) {
		if (strcmp(refs[i - 1].key, refs[i].key) == 0 && refs[i].idx < dup &&
		    (i < 2 || strcmp(refs[i - 2].key, refs[i].key) != 0)) {
			dup = refs[i].idx;
			first = refs[i - 1].idx;
		}
	}
	free(refs);
	if (dup != SIZE_MAX) {
		const struct ice_yaml_node *k = n->kids[2 * dup];
		const struct ice_yaml_node *f = n->kids[2 * first];
		char kp[ICE_CFG_KEY_MAX];

		snprintf(kp, sizeof(kp), "%s", path);
		path_join(kp, sizeof(kp), strlen(kp), k->scalar);
		ice_cfg_errf(err, doc, k, kp, "duplicate key (first defined at line %d, column %d)",
			     f->line, f->column);
		return -EINVAL;
	}
	return 0;
}

/* Check the tree under n once per node: keys are scalars and unique, nesting
 * is bounded. path is the dotted key path of n. */
static int doc_check(const struct ice_yaml_doc *doc, struct ice_yaml_node *n, const char *path,
		     int depth, struct ice_cfg_err *err)
{
	size_t plen = strlen(path);
	char sub[ICE_CFG_KEY_MAX];
	int ret;

	if (n->kind == ICE_YAML_SCALAR || n->walked)
		return 0;
	if (depth >= ICE_YAML_MAX_DEPTH) {
		ice_cfg_errf(err, doc, n, path, "nesting deeper than %d levels",
			     ICE_YAML_MAX_DEPTH);
		return -EINVAL;
	}
	n->walked = true;
	snprintf(sub, sizeof(sub), "%s", path);
	if (n->kind == ICE_YAML_SEQ) {
		for (size_t i = 0; i < n->len; i++) {
			snprintf(sub + plen, sizeof(sub) - plen, "[%zu]", i);
			ret = doc_check(doc, (struct ice_yaml_node *)n->kids[i], sub, depth + 1,
					err);
			if (ret < 0)
				return ret;
		}
		return 0;
	}
	for (size_t i = 0; i < n->len; i++) {
		const struct ice_yaml_node *k = n->kids[2 * i];

		if (k->kind != ICE_YAML_SCALAR) {
			ice_cfg_errf(err, doc, k, path, "mapping keys must be scalars, got %s",
				     kind_name(k->kind));
			return -EINVAL;
		}
	}
	ret = map_check_dups(doc, n, path, err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n->len; i++) {
		path_join(sub, sizeof(sub), plen, n->kids[2 * i]->scalar);
		ret = doc_check(doc, (struct ice_yaml_node *)n->kids[2 * i + 1], sub, depth + 1,
				err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static struct ice_yaml_doc *doc_load(const char *name, const unsigned char *text, size_t len,
				     struct ice_cfg_err *err)
{
	yaml_parser_t parser;
	yaml_document_t extra;
	struct ice_yaml_doc *doc;
	yaml_node_t *yroot;
	int ret = -ENOMEM;

	doc = calloc(1, sizeof(*doc));
	if (doc == NULL)
		goto err;
	doc->name = strdup(name);
	if (doc->name == NULL)
		goto err;
	if (!yaml_parser_initialize(&parser))
		goto err;
	yaml_parser_set_input_string(&parser, text, len);
	if (!yaml_parser_load(&parser, &doc->ydoc)) {
		ret = parser_error(&parser, name, err);
		goto err_parser;
	}
	/* One document per file: a second one is almost always a mistake. */
	if (!yaml_parser_load(&parser, &extra)) {
		ret = parser_error(&parser, name, err);
		goto err_parser;
	}
	if (yaml_document_get_root_node(&extra) != NULL) {
		err_set(err, name, (int)extra.start_mark.line + 1, (int)extra.start_mark.column + 1,
			NULL, "a second YAML document starts here; expected a single document");
		yaml_document_delete(&extra);
		ret = -EINVAL;
		goto err_parser;
	}
	yaml_document_delete(&extra);
	yaml_parser_delete(&parser);

	ret = doc_build(doc);
	if (ret < 0)
		goto err;
	doc->empty_root.kind = ICE_YAML_MAP;
	doc->empty_root.line = 1;
	doc->empty_root.column = 1;
	doc->empty_root.kids = doc->kids;
	yroot = yaml_document_get_root_node(&doc->ydoc);
	/* "" and "---" alone are empty documents too (a plain empty scalar). */
	if (yroot == NULL || (yroot->type == YAML_SCALAR_NODE && yroot->data.scalar.length == 0 &&
			      yroot->data.scalar.style == YAML_PLAIN_SCALAR_STYLE))
		doc->root = &doc->empty_root;

	ret = doc_check(doc, (struct ice_yaml_node *)doc->root, "", 0, err);
	if (ret < 0)
		goto err;
	return doc;

err_parser:
	yaml_parser_delete(&parser);
err:
	if (ret == -ENOMEM)
		err_set(err, name, 0, 0, NULL, "out of memory");
	ice_yaml_free(doc);
	errno = -ret;
	return NULL;
}

struct ice_yaml_doc *ice_yaml_load_string(const char *name, const char *text, size_t len,
					  struct ice_cfg_err *err)
{
	if (name == NULL)
		name = "<string>";
	if (text == NULL)
		text = "";
	return doc_load(name, (const unsigned char *)text, len, err);
}

/* Read all of fd into a NUL-terminated heap buffer. */
static int read_all(int fd, char **out, size_t *out_len)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (cap - len < 2) {
			char *nb;

			if (cap >= ICE_YAML_MAX_FILE) {
				free(buf);
				return -EFBIG;
			}
			nb = realloc(buf, cap * 2);
			if (nb == NULL) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int ret = -errno;

			free(buf);
			return ret;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}

struct ice_yaml_doc *ice_yaml_load_file(const char *path, struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc;
	size_t len = 0;
	char *text = NULL;
	int fd, ret;

	if (path == NULL) {
		err_set(err, NULL, 0, 0, NULL, "no file name given");
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = errno;
		err_set(err, path, 0, 0, NULL, "cannot open: %s", strerror(ret));
		errno = ret;
		return NULL;
	}
	ret = read_all(fd, &text, &len);
	close(fd);
	if (ret < 0) {
		err_set(err, path, 0, 0, NULL, "cannot read: %s",
			ret == -EFBIG ? "file larger than 64 MiB" : strerror(-ret));
		errno = -ret;
		return NULL;
	}
	doc = doc_load(path, (const unsigned char *)text, len, err);
	ret = errno;
	free(text);
	errno = ret;
	return doc;
}

void ice_yaml_free(struct ice_yaml_doc *doc)
{
	int saved = errno;

	if (doc == NULL)
		return;
	yaml_document_delete(&doc->ydoc);
	free(doc->nodes);
	free(doc->kids);
	free(doc->name);
	free(doc);
	errno = saved;
}

/* ---- navigation ----------------------------------------------------------- */

const char *ice_yaml_doc_name(const struct ice_yaml_doc *doc)
{
	return doc != NULL ? doc->name : NULL;
}

const struct ice_yaml_node *ice_yaml_root(const struct ice_yaml_doc *doc)
{
	return doc != NULL ? doc->root : NULL;
}

enum ice_yaml_kind ice_yaml_kind(const struct ice_yaml_node *n)
{
	return n != NULL ? n->kind : ICE_YAML_SCALAR;
}

int ice_yaml_line(const struct ice_yaml_node *n)
{
	return n != NULL ? n->line : 0;
}

int ice_yaml_column(const struct ice_yaml_node *n)
{
	return n != NULL ? n->column : 0;
}

const char *ice_yaml_scalar(const struct ice_yaml_node *n)
{
	return n != NULL && n->kind == ICE_YAML_SCALAR ? n->scalar : NULL;
}

size_t ice_yaml_len(const struct ice_yaml_node *n)
{
	return n != NULL && n->kind != ICE_YAML_SCALAR ? n->len : 0;
}

const struct ice_yaml_node *ice_yaml_at(const struct ice_yaml_node *n, size_t i)
{
	if (n == NULL || i >= n->len)
		return NULL;
	if (n->kind == ICE_YAML_SEQ)
		return n->kids[i];
	if (n->kind == ICE_YAML_MAP)
		return n->kids[2 * i + 1];
	return NULL;
}

const struct ice_yaml_node *ice_yaml_key_at(const struct ice_yaml_node *n, size_t i)
{
	if (n == NULL || n->kind != ICE_YAML_MAP || i >= n->len)
		return NULL;
	return n->kids[2 * i];
}

const struct ice_yaml_node *ice_yaml_get(const struct ice_yaml_node *n, const char *key)
{
	if (n == NULL || n->kind != ICE_YAML_MAP || key == NULL)
		return NULL;
	for (size_t i = 0; i < n->len; i++) {
		const struct ice_yaml_node *k = n->kids[2 * i];

		if (k->kind == ICE_YAML_SCALAR && strcmp(k->scalar, key) == 0)
			return n->kids[2 * i + 1];
	}
	return NULL;
}

/* ---- value parsing -------------------------------------------------------- */

/*
 * Ranges: a field whose min and max are both 0 takes the whole range of its
 * C type; otherwise [min, max], clipped to the type.
 */
static bool field_unbounded(const struct ice_cfg_field *f)
{
	return f->min == 0 && f->max == 0;
}

static uint64_t u64_type_max(enum ice_cfg_type type)
{
	return type == ICE_CFG_U32 ? UINT32_MAX : UINT64_MAX;
}

/* [lo, hi] of an unsigned field, as integers. */
static void field_urange(const struct ice_cfg_field *f, uint64_t *lo, uint64_t *hi)
{
	uint64_t tmax = u64_type_max(f->type);

	*lo = 0;
	*hi = tmax;
	if (field_unbounded(f))
		return;
	if (f->min > 0) {
		if (f->min >= 18446744073709551616.0) {
			*lo = UINT64_MAX;
		} else {
			*lo = (uint64_t)f->min;
			if ((double)*lo < f->min) /* round up */
				(*lo)++;
		}
	}
	if (f->max < 0) {
		*hi = 0;
		*lo = 1; /* empty range */
	} else if (f->max < 18446744073709551616.0) {
		uint64_t h = (uint64_t)f->max;

		if (h < *hi)
			*hi = h;
	}
}

static void field_irange(const struct ice_cfg_field *f, int64_t *lo, int64_t *hi)
{
	*lo = INT64_MIN;
	*hi = INT64_MAX;
	if (field_unbounded(f))
		return;
	if (f->min > -9223372036854775808.0) {
		if (f->min >= 9223372036854775808.0) {
			*lo = INT64_MAX;
		} else {
			*lo = (int64_t)f->min;
			if ((double)*lo < f->min)
				(*lo)++;
		}
	}
	if (f->max < 9223372036854775808.0) {
		if (f->max <= -9223372036854775808.0) {
			*hi = INT64_MIN;
		} else {
			*hi = (int64_t)f->max;
			if ((double)*hi > f->max)
				(*hi)--;
		}
	}
}

/* Parse an unsigned integer: decimal or 0x hex, optional '+', nothing else.
 * -ERANGE for a negative number or one that does not fit 64 bits. */
static int parse_u64(const char *s, uint64_t *out)
{
	const char *p = s;
	bool neg = false;
	unsigned long long v;
	char *end;
	int base = 10;

	if (*p == '+' || *p == '-') {
		neg = *p == '-';
		p++;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		/* strtoull would take a second "0x" */
		if (!isxdigit((unsigned char)*p) || (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')))
			return -EINVAL;
	} else if (!isdigit((unsigned char)*p)) {
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(p, &end, base);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	if (neg && v != 0)
		return -ERANGE;
	*out = v;
	return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	bool neg = *s == '-';
	uint64_t mag;
	int ret;

	if (neg && (s[1] == '+' || s[1] == '-'))
		return -EINVAL;
	ret = parse_u64(neg ? s + 1 : s, &mag);
	if (ret < 0)
		return ret;
	if (neg) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return -ERANGE;
		*out = (int64_t)mag;
	}
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!(isdigit((unsigned char)*s) || *s == '+' || *s == '-' || *s == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || isnan(v))
		return -EINVAL;
	if (isinf(v))
		return errno == ERANGE ? -ERANGE : -EINVAL; /* overflow vs "inf" */
	*out = v;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1", "y"};
	static const char *const no[] = {"false", "no", "off", "0", "n"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Format a bound: integers without exponent, others with %g. */
static void fmt_num(char *buf, size_t len, double v)
{
	if (v == (double)(long long)v && v > -9.2e18 && v < 9.2e18)
		snprintf(buf, len, "%lld", (long long)v);
	else
		snprintf(buf, len, "%g", v);
}

/* Format ns as the largest unit that divides it exactly. */
static void fmt_duration(char *buf, size_t len, uint64_t ns)
{
	static const struct {
		const char *name;
		uint64_t mult;
	} units[] = {{"s", ICE_NSEC_PER_SEC}, {"ms", ICE_NSEC_PER_MSEC}, {"us", ICE_NSEC_PER_USEC}};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns != 0 && ns % units[i].mult == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].mult),
				 units[i].name);
			return;
		}
	}
	snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

static const char *unit_name_ns(uint64_t unit)
{
	switch (unit) {
	case 0:
	case 1:
		return "ns";
	case ICE_NSEC_PER_USEC:
		return "us";
	case ICE_NSEC_PER_MSEC:
		return "ms";
	case ICE_NSEC_PER_SEC:
		return "s";
	}
	return NULL;
}

/* Format "one of: a, b, c" (or the list of keys) into msg, marking a cut. */
static void list_add(char *buf, size_t len, size_t *off, const char *const *names, size_t n,
		     size_t stride)
{
	for (size_t i = 0; i < n; i++) {
		const char *name = *(const char *const *)((const char *)names + i * stride);
		size_t need = strlen(name) + 2 + 4; /* ", " and room for ", ..." */

		if (*off + need >= len) {
			buf_add(buf, len, off, "%s...", i > 0 ? ", " : "");
			return;
		}
		buf_add(buf, len, off, "%s%s", i > 0 ? ", " : "", name);
	}
}

static size_t choices_count(const char *const *choices)
{
	size_t n = 0;

	while (choices != NULL && choices[n] != NULL)
		n++;
	return n;
}

/*
 * Store text into the field of obj. On failure returns -EINVAL (not a value
 * of the right form) or -ERANGE (outside the range / too long) and writes
 * what was expected into msg.
 */
static int field_store(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t msg_len)
{
	char *p = (char *)obj + f->offset;
	char lo_s[32], hi_s[32];
	size_t off = 0;
	int ret = 0;

	switch (f->type) {
	case ICE_CFG_BOOL: {
		bool v;

		ret = parse_bool(text, &v);
		if (ret == 0) {
			*(bool *)p = v;
			return 0;
		}
		snprintf(msg, msg_len,
			 "expected a boolean (true/false, yes/no, on/off, 1/0), got '%s'", text);
		return ret;
	}
	case ICE_CFG_INT: {
		int64_t v, lo, hi;

		field_irange(f, &lo, &hi);
		ret = parse_i64(text, &v);
		if (ret == 0 && (v < lo || v > hi))
			ret = -ERANGE;
		if (ret == 0) {
			*(int64_t *)p = v;
			return 0;
		}
		snprintf(msg, msg_len, "expected an integer in [%lld, %lld], got '%s'",
			 (long long)lo, (long long)hi, text);
		return ret;
	}
	case ICE_CFG_UINT:
	case ICE_CFG_U32: {
		uint64_t v, lo, hi;

		field_urange(f, &lo, &hi);
		ret = parse_u64(text, &v);
		if (ret == 0 && (v < lo || v > hi))
			ret = -ERANGE;
		if (ret == 0) {
			if (f->type == ICE_CFG_U32)
				*(uint32_t *)p = (uint32_t)v;
			else
				*(uint64_t *)p = v;
			return 0;
		}
		snprintf(msg, msg_len, "expected an integer in [%llu, %llu], got '%s'",
			 (unsigned long long)lo, (unsigned long long)hi, text);
		return ret;
	}
	case ICE_CFG_DOUBLE: {
		double v;

		ret = parse_double(text, &v);
		if (ret == 0 && !field_unbounded(f) && (v < f->min || v > f->max))
			ret = -ERANGE;
		if (ret == 0) {
			*(double *)p = v;
			return 0;
		}
		if (field_unbounded(f)) {
			snprintf(msg, msg_len, "expected a number, got '%s'", text);
		} else {
			fmt_num(lo_s, sizeof(lo_s), f->min);
			fmt_num(hi_s, sizeof(hi_s), f->max);
			snprintf(msg, msg_len, "expected a number in [%s, %s], got '%s'", lo_s,
				 hi_s, text);
		}
		return ret;
	}
	case ICE_CFG_STRING: {
		size_t n = strlen(text);

		if (f->size == 0 || n >= f->size) {
			snprintf(msg, msg_len,
				 "expected a string of at most %zu characters, got %zu",
				 f->size > 0 ? f->size - 1 : 0, n);
			return -ERANGE;
		}
		memcpy(p, text, n + 1);
		return 0;
	}
	case ICE_CFG_DURATION:
	case ICE_CFG_SIZE:
	case ICE_CFG_RATE: {
		uint64_t v, lo, hi;
		const char *what, *unit;

		field_urange(f, &lo, &hi);
		if (f->type == ICE_CFG_DURATION) {
			ret = ice_parse_duration(text, f->unit != 0 ? f->unit : 1, &v);
			what = "a duration such as 300us, 4ms or 2s";
			fmt_duration(lo_s, sizeof(lo_s), lo);
			fmt_duration(hi_s, sizeof(hi_s), hi);
		} else if (f->type == ICE_CFG_SIZE) {
			ret = ice_parse_size(text, &v);
			what = "a size such as 4096, 4K, 64M or 1G";
			snprintf(lo_s, sizeof(lo_s), "%llu", (unsigned long long)lo);
			snprintf(hi_s, sizeof(hi_s), "%llu", (unsigned long long)hi);
		} else {
			ret = ice_parse_rate(text, &v);
			what = "a rate such as 200mbit or 10gbit";
			snprintf(lo_s, sizeof(lo_s), "%llubit", (unsigned long long)lo);
			snprintf(hi_s, sizeof(hi_s), "%llubit", (unsigned long long)hi);
		}
		if (ret == 0 && (v < lo || v > hi))
			ret = -ERANGE;
		if (ret == 0) {
			*(uint64_t *)p = v;
			return 0;
		}
		buf_add(msg, msg_len, &off, "expected %s", what);
		unit = f->type == ICE_CFG_DURATION ? unit_name_ns(f->unit) : NULL;
		if (unit != NULL)
			buf_add(msg, msg_len, &off, " (bare numbers in %s)", unit);
		else if (f->type == ICE_CFG_DURATION)
			buf_add(msg, msg_len, &off, " (bare numbers in units of %lluns)",
				(unsigned long long)f->unit);
		if (!field_unbounded(f))
			buf_add(msg, msg_len, &off, " in [%s, %s]", lo_s, hi_s);
		buf_add(msg, msg_len, &off, ", got '%s'", text);
		return ret == -ERANGE ? -ERANGE : -EINVAL;
	}
	case ICE_CFG_ENUM: {
		size_t n = choices_count(f->choices);

		for (size_t i = 0; i < n; i++) {
			if (strcmp(text, f->choices[i]) == 0) {
				*(int *)p = (int)i;
				return 0;
			}
		}
		buf_add(msg, msg_len, &off, "expected one of: ");
		/* leave room for the "got" part */
		list_add(msg, msg_len > 64 ? msg_len - 64 : msg_len, &off, f->choices, n,
			 sizeof(f->choices[0]));
		buf_add(msg, msg_len, &off, "; got '%s'", text);
		return -EINVAL;
	}
	}
	snprintf(msg, msg_len, "field has unknown type %d", (int)f->type);
	return -EINVAL;
}

/* ---- binding -------------------------------------------------------------- */

static const struct ice_cfg_field *field_find(const struct ice_cfg_field *fields, size_t nfields,
					      const char *key)
{
	for (size_t i = 0; i < nfields; i++)
		if (strcmp(fields[i].key, key) == 0)
			return &fields[i];
	return NULL;
}

/* Levenshtein distance, capped: returns a value > cap when further. */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[64];

	if (lb >= sizeof(row) / sizeof(row[0]) || (la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* "unknown key; did you mean 'x'? expected one of: a, b, c" */
static void unknown_key_msg(const struct ice_cfg_field *fields, size_t nfields, const char *key,
			    char *msg, size_t msg_len)
{
	const char *best = NULL;
	size_t best_d = 3, off = 0;

	for (size_t i = 0; i < nfields; i++) {
		size_t d = edit_distance(key, fields[i].key, 2);

		if (d < best_d) {
			best_d = d;
			best = fields[i].key;
		}
	}
	buf_add(msg, msg_len, &off, "unknown key '%s'; ", key);
	if (best != NULL)
		buf_add(msg, msg_len, &off, "did you mean '%s'? ", best);
	if (nfields == 0) {
		buf_add(msg, msg_len, &off, "no keys are accepted here");
		return;
	}
	buf_add(msg, msg_len, &off, "expected one of: ");
	list_add(msg, msg_len, &off, &fields[0].key, nfields, sizeof(fields[0]));
}

int ice_cfg_bind(const struct ice_yaml_doc *doc, const struct ice_yaml_node *map,
		 const char *prefix, const struct ice_cfg_field *fields, size_t nfields, void *obj,
		 unsigned flags, struct ice_cfg_err *err)
{
	char path[ICE_CFG_KEY_MAX];
	char msg[sizeof(((struct ice_cfg_err *)0)->msg)];
	size_t plen;

	if (prefix == NULL)
		prefix = "";
	snprintf(path, sizeof(path), "%s", prefix);
	plen = strlen(path);
	if (map == NULL)
		return 0;
	if (map->kind != ICE_YAML_MAP) {
		ice_cfg_errf(err, doc, map, path, "expected a mapping, got %s",
			     kind_name(map->kind));
		return -EINVAL;
	}
	for (size_t i = 0; i < map->len; i++) {
		const struct ice_yaml_node *k = map->kids[2 * i];
		const struct ice_yaml_node *v = map->kids[2 * i + 1];
		const struct ice_cfg_field *f;

		path_join(path, sizeof(path), plen, k->scalar);
		f = field_find(fields, nfields, k->scalar);
		if (f == NULL) {
			if (!(flags & ICE_CFG_STRICT))
				continue;
			unknown_key_msg(fields, nfields, k->scalar, msg, sizeof(msg));
			ice_cfg_errf(err, doc, k, path, "%s", msg);
			return -EINVAL;
		}
		if (v->kind != ICE_YAML_SCALAR) {
			ice_cfg_errf(err, doc, v, path, "expected a scalar value, got %s",
				     kind_name(v->kind));
			return -EINVAL;
		}
		if (field_store(f, obj, v->scalar, msg, sizeof(msg)) < 0) {
			ice_cfg_errf(err, doc, v, path, "%s", msg);
			return -EINVAL;
		}
	}
	return 0;
}

int ice_cfg_set(const struct ice_cfg_field *fields, size_t nfields, void *obj, const char *key,
		const char *value, struct ice_cfg_err *err)
{
	char msg[sizeof(((struct ice_cfg_err *)0)->msg)];
	const struct ice_cfg_field *f;
	int ret;

	if (key == NULL || value == NULL) {
		err_set(err, NULL, 0, 0, key, "missing key or value");
		return -EINVAL;
	}
	f = field_find(fields, nfields, key);
	if (f == NULL) {
		unknown_key_msg(fields, nfields, key, msg, sizeof(msg));
		err_set(err, NULL, 0, 0, key, "%s", msg);
		return -ENOENT;
	}
	ret = field_store(f, obj, value, msg, sizeof(msg));
	if (ret < 0)
		err_set(err, NULL, 0, 0, key, "%s", msg);
	return ret;
}

int ice_cfg_set_kv(const struct ice_cfg_field *fields, size_t nfields, void *obj, const char *kv,
		   struct ice_cfg_err *err)
{
	char key[ICE_CFG_KEY_MAX];
	const char *eq;
	size_t klen;

	eq = kv != NULL ? strchr(kv, '=') : NULL;
	if (eq == NULL || eq == kv) {
		err_set(err, NULL, 0, 0, NULL, "expected key=value, got '%s'",
			kv != NULL ? kv : "");
		return -EINVAL;
	}
	klen = (size_t)(eq - kv);
	if (klen >= sizeof(key)) {
		err_set(err, NULL, 0, 0, NULL, "key too long in '%s'", kv);
		return -ENOENT;
	}
	memcpy(key, kv, klen);
	key[klen] = '\0';
	return ice_cfg_set(fields, nfields, obj, key, eq + 1, err);
}

/* ---- files, flags and command lines ----------------------------------------- */

int ice_cfg_load_file(const char *path, const struct ice_cfg_field *fields, size_t nfields,
		      void *obj, struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc = ice_yaml_load_file(path, err);
	int ret;

	if (doc == NULL)
		return -EINVAL;
	ret = ice_cfg_bind(doc, ice_yaml_root(doc), NULL, fields, nfields, obj, ICE_CFG_STRICT,
			   err);
	ice_yaml_free(doc);
	return ret;
}

/* The key of a flag: '-' stands for '_'. */
static void flag_key(const char *flag, char *key, size_t len)
{
	snprintf(key, len, "%s", flag);
	for (size_t i = 0; key[i] != '\0'; i++)
		if (key[i] == '-')
			key[i] = '_';
}

int ice_cfg_set_flag(const struct ice_cfg_field *fields, size_t nfields, void *obj,
		     const char *flag, const char *value, struct ice_cfg_err *err)
{
	char key[64];

	flag_key(flag, key, sizeof(key));
	return ice_cfg_set(fields, nfields, obj, key, value, err);
}

int ice_cfg_fail(struct ice_cfg_err *err, const char *path, const char *key, const char *fmt, ...)
{
	struct ice_cfg_err scratch;
	struct ice_yaml_doc *doc = NULL;
	const struct ice_yaml_node *n = NULL;
	va_list ap;

	if (err == NULL)
		return -EINVAL;
	if (path != NULL) {
		doc = ice_yaml_load_file(path, &scratch);
		if (doc != NULL)
			n = ice_yaml_get(ice_yaml_root(doc), key);
	}
	memset(err, 0, sizeof(*err));
	if (n != NULL) {
		snprintf(err->file, sizeof(err->file), "%s", path);
		err->line = ice_yaml_line(n);
		err->column = ice_yaml_column(n);
	}
	snprintf(err->key, sizeof(err->key), "%s", key);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	ice_yaml_free(doc);
	return -EINVAL;
}

bool ice_cfg_name_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (!ice_cfg_name_char(*s))
			return false;
	return true;
}

void ice_cfg_usage(const struct ice_cfg_field *fields, size_t nfields, FILE *f)
{
	fprintf(f, "keys (YAML file or flags; '-' and '_' alike in flags):\n");
	for (size_t i = 0; i < nfields; i++)
		fprintf(f, "  --%-14s %s\n", fields[i].key, fields[i].help);
}

static int cli_error(const struct ice_cfg_cli *cli, const struct ice_cfg_err *err, const char *flag)
{
	char buf[768];

	if (flag != NULL)
		fprintf(stderr, "%s: flag --%s: %s\n", cli->tool, flag, err->msg);
	else
		fprintf(stderr, "%s: %s\n", cli->tool, ice_cfg_err_str(err, buf, sizeof(buf)));
	return -EINVAL;
}

static bool bool_word(const char *s)
{
	static const char *const words[] = {"true", "false", "yes", "no", "on",
					    "off",  "1",     "0",   "y",  "n"};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	return false;
}

static bool cli_bool_flag(const struct ice_cfg_cli *cli, const char *flag)
{
	const struct ice_cfg_field *f;
	char key[64];

	flag_key(flag, key, sizeof(key));
	f = field_find(cli->fields, cli->nfields, key);
	return f != NULL && f->type == ICE_CFG_BOOL;
}

int ice_cfg_parse_args(const struct ice_cfg_cli *cli, int argc, char **argv)
{
	const char *config = NULL;
	struct ice_cfg_err err;
	int ret;

	/* first the file, then the flags over it */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config = argv[++i];
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("%s\n", cli->synopsis);
			ice_cfg_usage(cli->fields, cli->nfields, stdout);
			printf("exit status: 0 ok, 1 run-time failure, 2 bad configuration\n");
			return 1;
		}
	}
	if (config != NULL &&
	    ice_cfg_load_file(config, cli->fields, cli->nfields, cli->obj, &err) < 0)
		return cli_error(cli, &err, NULL);
	for (int i = 1; i < argc; i++) {
		bool dashes = strncmp(argv[i], "--", 2) == 0;
		const char *flag = dashes ? argv[i] + 2 : NULL;

		if (strcmp(argv[i], "--config") == 0) {
			i++;
		} else if (cli->switch_flag != NULL && strcmp(argv[i], cli->switch_flag) == 0) {
			*cli->switch_set = true;
		} else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
			if (ice_log_setup(argv[++i]) < 0) {
				fprintf(stderr,
					"%s: flag --log: expected LEVEL[,debug=SUB+SUB], got "
					"'%s'\n",
					cli->tool, argv[i]);
				return -EINVAL;
			}
		} else if (dashes && cli_bool_flag(cli, flag)) {
			/* "--KEY" alone means true; "--KEY false" (a boolean word
			 * next) sets that value */
			const char *v = "true";

			if (i + 1 < argc && bool_word(argv[i + 1]))
				v = argv[++i];
			if (ice_cfg_set_flag(cli->fields, cli->nfields, cli->obj, flag, v, &err) <
			    0)
				return cli_error(cli, &err, flag);
		} else if (dashes && i + 1 < argc) {
			ret = ice_cfg_set_flag(cli->fields, cli->nfields, cli->obj, flag,
					       argv[i + 1], &err);
			if (ret == -ENOENT) {
				fprintf(stderr, "%s: unknown flag '%s' (see --help)\n", cli->tool,
					argv[i]);
				return -EINVAL;
			}
			if (ret < 0)
				return cli_error(cli, &err, flag);
			i++;
		} else {
			fprintf(stderr, "%s: unexpected '%s' (see --help)\n", cli->tool, argv[i]);
			return -EINVAL;
		}
	}
	if (cli->finish(cli->obj, config, &err) < 0)
		return cli_error(cli, &err, NULL);
	return 0;
}
