/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_config: what its files share; not for use outside common/.
 *   ice_config_yaml.c   loading YAML into nodes with positions, navigation
 *   ice_config_value.c  parsing a value into a field: forms, ranges, messages
 *   ice_config.c        errors, binding a mapping or key=value to a table,
 *                       files and flags
 *   ice_config_cli.c    command lines: aliases, switches, positionals,
 *                       subcommands, --help
 */
#ifndef ICE_CONFIG_INTERNAL_H
#define ICE_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

#include "ice_config.h"

#define ICE_CFG_KEY_MAX sizeof(((struct ice_cfg_err *)0)->key)

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

/* ---- ice_config.c ---------------------------------------------------------- */

void ice_cfg_err_set(struct ice_cfg_err *err, const char *file, int line, int column,
		     const char *key, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* snprintf at *off into buf[len], never moving *off past the end. */
void ice_cfg_buf_add(char *buf, size_t len, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Levenshtein distance of a and b; a value above cap when further. */
size_t ice_cfg_edit_distance(const char *a, const char *b, size_t cap);
/* "unknown key 'k'; did you mean 'x'? expected one of: a, b, c" into msg. */
void ice_cfg_unknown_key_msg(const struct ice_cfg_field *fields, size_t nfields, const char *key,
			     char *msg, size_t msg_len);

/* ---- ice_config_yaml.c ----------------------------------------------------- */

const char *ice_yaml_kind_name(enum ice_yaml_kind kind);
/* Extend the dotted key path in buf (which holds base_len chars). */
void ice_cfg_path_join(char *buf, size_t len, size_t base_len, const char *key);

/* ---- ice_config_value.c ---------------------------------------------------- */

/* true/false, yes/no, on/off, 1/0, y/n, in any case; -EINVAL otherwise. */
int ice_cfg_parse_bool(const char *s, bool *out);
/* Append names (n of them, stride bytes apart) as "a, b, c", marking a cut. */
void ice_cfg_list_add(char *buf, size_t len, size_t *off, const char *const *names, size_t n,
		      size_t stride);
/* Store text into the field of obj. On failure returns -EINVAL (not a value
 * of the right form) or -ERANGE (outside the range / too long) and writes
 * what was expected into msg. */
int ice_cfg_field_store(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
			size_t msg_len);

#endif /* ICE_CONFIG_INTERNAL_H */
