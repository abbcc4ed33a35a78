// SPDX-License-Identifier: Apache-2.0
/*
 * ice_config: errors with positions, and table-driven binding: a YAML
 * mapping, key=value strings, a file, flags and a daemon's command line, all
 * through one ice_cfg_field table. YAML loading is in ice_config_yaml.c,
 * value parsing in ice_config_value.c, command lines in ice_config_cli.c
 * (ice_config_internal.h).
 */
#include "ice_config_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

void ice_cfg_err_set(struct ice_cfg_err *err, const char *file, int line, int column,
		     const char *key, const char *fmt, ...)
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

void ice_cfg_buf_add(char *buf, size_t len, size_t *off, const char *fmt, ...)
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
		ice_cfg_buf_add(buf, len, &off, "%s", err->file);
	if (err->line > 0) {
		ice_cfg_buf_add(buf, len, &off, "%s%d", off > 0 ? ":" : "", err->line);
		if (err->column > 0)
			ice_cfg_buf_add(buf, len, &off, ":%d", err->column);
	}
	if (off > 0)
		ice_cfg_buf_add(buf, len, &off, ": ");
	if (err->key[0] != '\0')
		ice_cfg_buf_add(buf, len, &off, "key '%s': ", err->key);
	ice_cfg_buf_add(buf, len, &off, "%s", err->msg);
	return buf;
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
size_t ice_cfg_edit_distance(const char *a, const char *b, size_t cap)
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

/* Keys an older release took, with what replaced them: an old config file
 * gets the new name and why instead of a guess. */
static const struct {
	const char *old, *now, *why;
} cfg_renamed[] = {
	{"plan_key", "plan_pubkeys",
	 "plans are signed with Ed25519 now: an agent holds the controller's public keys "
	 "(icectl keygen), not the shared HMAC key"},
};

/* "unknown key; did you mean 'x'? expected one of: a, b, c" */
void ice_cfg_unknown_key_msg(const struct ice_cfg_field *fields, size_t nfields, const char *key,
			     char *msg, size_t msg_len)
{
	const char *best = NULL;
	size_t best_d = 3, off = 0;

	for (size_t r = 0; r < sizeof(cfg_renamed) / sizeof(cfg_renamed[0]); r++) {
		if (strcmp(key, cfg_renamed[r].old) != 0)
			continue;
		for (size_t i = 0; i < nfields; i++)
			if (strcmp(fields[i].key, cfg_renamed[r].now) == 0) {
				ice_cfg_buf_add(msg, msg_len, &off, "key '%s' is now '%s': %s", key,
						cfg_renamed[r].now, cfg_renamed[r].why);
				return;
			}
	}
	for (size_t i = 0; i < nfields; i++) {
		size_t d = ice_cfg_edit_distance(key, fields[i].key, 2);

		if (d < best_d) {
			best_d = d;
			best = fields[i].key;
		}
	}
	ice_cfg_buf_add(msg, msg_len, &off, "unknown key '%s'; ", key);
	if (best != NULL)
		ice_cfg_buf_add(msg, msg_len, &off, "did you mean '%s'? ", best);
	if (nfields == 0) {
		ice_cfg_buf_add(msg, msg_len, &off, "no keys are accepted here");
		return;
	}
	ice_cfg_buf_add(msg, msg_len, &off, "expected one of: ");
	ice_cfg_list_add(msg, msg_len, &off, &fields[0].key, nfields, sizeof(fields[0]));
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
			     ice_yaml_kind_name(map->kind));
		return -EINVAL;
	}
	for (size_t i = 0; i < map->len; i++) {
		const struct ice_yaml_node *k = map->kids[2 * i];
		const struct ice_yaml_node *v = map->kids[2 * i + 1];
		const struct ice_cfg_field *f;

		ice_cfg_path_join(path, sizeof(path), plen, k->scalar);
		f = field_find(fields, nfields, k->scalar);
		if (f == NULL) {
			if (!(flags & ICE_CFG_STRICT))
				continue;
			ice_cfg_unknown_key_msg(fields, nfields, k->scalar, msg, sizeof(msg));
			ice_cfg_errf(err, doc, k, path, "%s", msg);
			return -EINVAL;
		}
		if (v->kind != ICE_YAML_SCALAR) {
			ice_cfg_errf(err, doc, v, path, "expected a scalar value, got %s",
				     ice_yaml_kind_name(v->kind));
			return -EINVAL;
		}
		if (ice_cfg_field_store(f, obj, v->scalar, msg, sizeof(msg)) < 0) {
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
		ice_cfg_err_set(err, NULL, 0, 0, key, "missing key or value");
		return -EINVAL;
	}
	f = field_find(fields, nfields, key);
	if (f == NULL) {
		ice_cfg_unknown_key_msg(fields, nfields, key, msg, sizeof(msg));
		ice_cfg_err_set(err, NULL, 0, 0, key, "%s", msg);
		return -ENOENT;
	}
	ret = ice_cfg_field_store(f, obj, value, msg, sizeof(msg));
	if (ret < 0)
		ice_cfg_err_set(err, NULL, 0, 0, key, "%s", msg);
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
		ice_cfg_err_set(err, NULL, 0, 0, NULL, "expected key=value, got '%s'",
				kv != NULL ? kv : "");
		return -EINVAL;
	}
	klen = (size_t)(eq - kv);
	if (klen >= sizeof(key)) {
		ice_cfg_err_set(err, NULL, 0, 0, NULL, "key too long in '%s'", kv);
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
