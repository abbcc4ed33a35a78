/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_config: YAML loading with precise errors, and table-driven binding of
 * YAML mappings (or "key=value" strings) to C structs.
 *
 * Every YAML node remembers its line and column, so any error can name the
 * file, the line, the key and what was expected:
 *     dcqcn.yaml:7:14: key 'rp_ai_rate': expected a number in [1, 400000], got 'fast'
 *
 * Ownership: ice_yaml_load_*() return a document the caller frees with
 * ice_yaml_free(); nodes and strings belong to the document.
 */
#ifndef ICE_CONFIG_H
#define ICE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ice_cfg_err {
	char file[256]; /* file name or "<string>"-style label; "" if none */
	int line;	/* 1-based; 0 when unknown */
	int column;	/* 1-based; 0 when unknown */
	char key[128];	/* dotted key path ("dcqcn.rp_ai_rate"); "" if none */
	char msg[384];	/* what was wrong and what was expected */
};

/* "file:line:col: key 'k': msg" (parts omitted when unknown). */
const char *ice_cfg_err_str(const struct ice_cfg_err *err, char *buf, size_t len);

enum ice_yaml_kind {
	ICE_YAML_SCALAR,
	ICE_YAML_MAP,
	ICE_YAML_SEQ,
};

struct ice_yaml_doc;
struct ice_yaml_node;

/* Parse a whole file / buffer. NULL + errno on failure, with err filled
 * (syntax errors carry libyaml's line and column). An empty document gives
 * an empty mapping as root. Anchors/aliases are resolved. */
struct ice_yaml_doc *ice_yaml_load_file(const char *path, struct ice_cfg_err *err);
struct ice_yaml_doc *ice_yaml_load_string(const char *name, const char *text, size_t len,
					  struct ice_cfg_err *err);
void ice_yaml_free(struct ice_yaml_doc *doc); /* NULL-safe */

const char *ice_yaml_doc_name(const struct ice_yaml_doc *doc);
const struct ice_yaml_node *ice_yaml_root(const struct ice_yaml_doc *doc);
enum ice_yaml_kind ice_yaml_kind(const struct ice_yaml_node *n);
int ice_yaml_line(const struct ice_yaml_node *n);
int ice_yaml_column(const struct ice_yaml_node *n);
/* Scalar text; NULL when n is not a scalar. */
const char *ice_yaml_scalar(const struct ice_yaml_node *n);
/* Number of entries of a map or a sequence (0 for scalars). */
size_t ice_yaml_len(const struct ice_yaml_node *n);
/* i-th item of a sequence, or i-th value of a map; NULL when out of range. */
const struct ice_yaml_node *ice_yaml_at(const struct ice_yaml_node *n, size_t i);
/* i-th key node of a map (a scalar); NULL when out of range / not a map. */
const struct ice_yaml_node *ice_yaml_key_at(const struct ice_yaml_node *n, size_t i);
/* Value of key in a map; NULL when absent or n is not a map. */
const struct ice_yaml_node *ice_yaml_get(const struct ice_yaml_node *n, const char *key);

/* Fill err for node n of doc: position from n, key as given, msg printf-style. */
void ice_cfg_errf(struct ice_cfg_err *err, const struct ice_yaml_doc *doc,
		  const struct ice_yaml_node *n, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Field types for binding. Numbers accept decimal, 0x hex and YAML floats
 * where the type allows; the units below follow ice_time.h's parsers. */
enum ice_cfg_type {
	ICE_CFG_BOOL,	  /* bool: true/false/yes/no/on/off/1/0 */
	ICE_CFG_INT,	  /* int64_t in [min, max] */
	ICE_CFG_UINT,	  /* uint64_t in [min, max] */
	ICE_CFG_U32,	  /* uint32_t in [min, max] */
	ICE_CFG_DOUBLE,	  /* double in [min, max] */
	ICE_CFG_STRING,	  /* char[size], must fit with its NUL */
	ICE_CFG_DURATION, /* uint64_t ns; bare numbers in 'unit' ns; range in ns */
	ICE_CFG_SIZE,	  /* uint64_t bytes, "4K" style */
	ICE_CFG_RATE,	  /* uint64_t bit/s, "200mbit" style */
	ICE_CFG_ENUM,	  /* int: index of the scalar in 'choices' (NULL-terminated) */
};

struct ice_cfg_field {
	const char *key;
	enum ice_cfg_type type;
	size_t offset; /* offsetof() in the bound struct */
	size_t size;   /* ICE_CFG_STRING: buffer size */
	double min, max;
	uint64_t unit;		    /* ICE_CFG_DURATION: unit of bare numbers, ns */
	const char *const *choices; /* ICE_CFG_ENUM */
	const char *help;	    /* one line: meaning and unit */
};

#define ICE_CFG_STRICT 0x1u /* unknown keys in the mapping are errors */

/* Bind the keys of mapping node map onto obj using fields[]. Keys absent
 * from the map leave obj unchanged (callers set defaults first). On error
 * obj may be partly written; returns -EINVAL with err naming file, line,
 * key path (prefix + "." + key when prefix is non-NULL) and expectation. */
int ice_cfg_bind(const struct ice_yaml_doc *doc, const struct ice_yaml_node *map,
		 const char *prefix, const struct ice_cfg_field *fields, size_t nfields, void *obj,
		 unsigned flags, struct ice_cfg_err *err);

/* Set one field from text, e.g. from "--set rp_ai_rate=10". -ENOENT for an
 * unknown key, -EINVAL / -ERANGE for a bad value; err says which. */
int ice_cfg_set(const struct ice_cfg_field *fields, size_t nfields, void *obj, const char *key,
		const char *value, struct ice_cfg_err *err);

/* Parse "key=value" and call ice_cfg_set(). */
int ice_cfg_set_kv(const struct ice_cfg_field *fields, size_t nfields, void *obj, const char *kv,
		   struct ice_cfg_err *err);

/* Load YAML file path and bind its root mapping onto obj (ICE_CFG_STRICT). */
int ice_cfg_load_file(const char *path, const struct ice_cfg_field *fields, size_t nfields,
		      void *obj, struct ice_cfg_err *err);

/* ice_cfg_set() from a command-line flag name: '-' in it stands for '_'. */
int ice_cfg_set_flag(const struct ice_cfg_field *fields, size_t nfields, void *obj,
		     const char *flag, const char *value, struct ice_cfg_err *err);

/* Fill err about key (msg printf-style), at key's line in YAML file path
 * when the file sets it (path may be NULL: a flag or a default). err may
 * be NULL. Returns -EINVAL. */
int ice_cfg_fail(struct ice_cfg_err *err, const char *path, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Letters, digits, '.', '-', '_': safe inside a Redis key and a hash tag. */
static inline bool ice_cfg_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '-' || ch == '_';
}

/* A non-empty string of ice_cfg_name_char() characters. */
bool ice_cfg_name_ok(const char *s);

/* The keys' lines of a daemon's --help: "  --KEY  help" for each field. */
void ice_cfg_usage(const struct ice_cfg_field *fields, size_t nfields, FILE *f);

/* A daemon's command line: [--config FILE] [--log SPEC] [--KEY VALUE]...
 * over one ice_cfg_field table. A flag naming an ICE_CFG_BOOL field takes
 * no value (it sets true). */
struct ice_cfg_cli {
	const char *tool;     /* prefix of messages, e.g. "ice-agent" */
	const char *synopsis; /* first line of --help: "usage: ..." */
	const struct ice_cfg_field *fields;
	size_t nfields;
	void *obj; /* the bound struct, with its defaults set */
	/* checks and completes obj; path is the --config file or NULL */
	int (*finish)(void *obj, const char *path, struct ice_cfg_err *err);
	const char *switch_flag; /* one more switch outside the table ("--once"), or NULL */
	bool *switch_set;	 /* set true when switch_flag is given */
};

/* Load --config, then apply the flags over it in order (--log SPEC sets
 * the log), then cli->finish(). Returns 0 to run, 1 after printing --help
 * (exit 0), or -EINVAL after printing what is wrong (exit 2). */
int ice_cfg_parse_args(const struct ice_cfg_cli *cli, int argc, char **argv);

#endif /* ICE_CONFIG_H */
