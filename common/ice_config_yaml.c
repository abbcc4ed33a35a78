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
#include "ice_config_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ICE_YAML_MAX_DEPTH 64	       /* nesting levels a config may use */
#define ICE_YAML_MAX_FILE  (64u << 20) /* bytes ice_yaml_load_file reads */

/* ---- loading -------------------------------------------------------------- */

const char *ice_yaml_kind_name(enum ice_yaml_kind kind)
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
		ice_cfg_err_set(err, name, 0, 0, NULL, "out of memory while parsing YAML");
		return -ENOMEM;
	case YAML_READER_ERROR:
		if (parser->problem_value != -1)
			ice_cfg_err_set(err, name, 0, 0, NULL, "%s #%X at byte offset %zu", problem,
					parser->problem_value, parser->problem_offset);
		else
			ice_cfg_err_set(err, name, 0, 0, NULL, "%s at byte offset %zu", problem,
					parser->problem_offset);
		return -EINVAL;
	default:
		break;
	}
	if (parser->context != NULL)
		ice_cfg_err_set(err, name, (int)parser->problem_mark.line + 1,
				(int)parser->problem_mark.column + 1, NULL,
				"YAML syntax error: %s (%s at line %zu, column %zu)", problem,
				parser->context, parser->context_mark.line + 1,
				parser->context_mark.column + 1);
	else
		ice_cfg_err_set(err, name, (int)parser->problem_mark.line + 1,
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

void ice_cfg_path_join(char *buf, size_t len, size_t base_len, const char *key)
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
		ice_cfg_path_join(kp, sizeof(kp), strlen(kp), k->scalar);
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
				     ice_yaml_kind_name(k->kind));
			return -EINVAL;
		}
	}
	ret = map_check_dups(doc, n, path, err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n->len; i++) {
		ice_cfg_path_join(sub, sizeof(sub), plen, n->kids[2 * i]->scalar);
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
		ice_cfg_err_set(err, name, (int)extra.start_mark.line + 1,
				(int)extra.start_mark.column + 1, NULL,
				"a second YAML document starts here; expected a single document");
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
		ice_cfg_err_set(err, name, 0, 0, NULL, "out of memory");
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
		ice_cfg_err_set(err, NULL, 0, 0, NULL, "no file name given");
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = errno;
		ice_cfg_err_set(err, path, 0, 0, NULL, "cannot open: %s", strerror(ret));
		errno = ret;
		return NULL;
	}
	ret = read_all(fd, &text, &len);
	close(fd);
	if (ret < 0) {
		ice_cfg_err_set(err, path, 0, 0, NULL, "cannot read: %s",
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
