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
	ICE_CFG_I32,	  /* int in [min, max] */
	ICE_CFG_FUNC,	  /* parse(): the field's own form (lists, KEY=VALUE, actions) */
	ICE_CFG_ARGV,	  /* char **: positional only: the rest of argv, verbatim */
};

/* ice_cfg_field.flags */
#define ICE_CFG_SWITCH	 0x1u /* a flag without a value: BOOL sets true, FUNC gets NULL */
#define ICE_CFG_REQUIRED 0x2u /* must be given (a flag, a positional or a YAML key) */

struct ice_cfg_field {
	const char *key;
	enum ice_cfg_type type;
	size_t offset; /* offsetof() in the bound struct */
	size_t size;   /* ICE_CFG_STRING: buffer size */
	double min, max;
	uint64_t unit;		    /* ICE_CFG_DURATION: unit of bare numbers, ns */
	const char *const *choices; /* ICE_CFG_ENUM */
	const char *help;	    /* meaning and unit; '\n' continues it in --help */
	/* command lines (ice_cfg_parse_args); all optional */
	char alias;	 /* short flag: 'b' for -b; 0 for none */
	unsigned flags;	 /* ICE_CFG_SWITCH, ICE_CFG_REQUIRED */
	const char *arg; /* the value's name in --help ("SIZE"); default from the type */
	/* ICE_CFG_FUNC: store text (NULL for an ICE_CFG_SWITCH) into obj; on a
	 * bad value write "expected ..., got '...'" into msg, return -EINVAL.
	 * Called once per occurrence, so a FUNC flag may be repeated. */
	int (*parse)(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		     size_t msg_len);
};

/* A row bound to member m of struct type T (size too: strings need it);
 * more designated initializers follow: .alias = 'b', .help = "...". */
#define ICE_CFG_ROW(T, k, t, m, ...)                                                               \
	{                                                                                          \
		.key = (k), .type = (t), .offset = offsetof(T, m), .size = sizeof(((T *)0)->m),    \
		__VA_ARGS__                                                                        \
	}
/* A row whose own parser fn (ICE_CFG_FUNC) stores the value. */
#define ICE_CFG_FUNC_ROW(k, fn, ...)                                                               \
	{                                                                                          \
		.key = (k), .type = ICE_CFG_FUNC, .parse = (fn), __VA_ARGS__                       \
	}

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

/* The keys' lines of a --help: "  -a, --KEY VALUE  help" for each field. */
void ice_cfg_usage(const struct ice_cfg_field *fields, size_t nfields, FILE *f);

/* More options bound to their own struct, e.g. options several tools share. */
struct ice_cfg_table {
	const char *title; /* heading in --help ("transport options"), or NULL */
	const struct ice_cfg_field *fields;
	size_t nfields;
	void *obj;
};

/* A subcommand: "TOOL NAME [options] ARGS..." (ice-fabric up FILE). Its
 * flags and positionals bind to the tool's obj, next to the tool's own
 * fields, which every command accepts. */
struct ice_cfg_cmd {
	const char *name;
	const char *help; /* one line in the tool's --help */
	const struct ice_cfg_field *fields;
	size_t nfields;
	const struct ice_cfg_field *args; /* positionals, in order */
	size_t nargs;
	int (*run)(void *obj); /* returns the exit status */
};

/*
 * A tool's command line over ice_cfg_field tables:
 *   TOOL [CMD] [--config FILE] [--log SPEC] [-h|--help] [--KEY VALUE | -A VALUE]... ARGS...
 * Flags may come anywhere; "--KEY=VALUE" and "-AVALUE" work too, '-' and
 * '_' are alike in keys, and "--" ends the flags. A flag naming an
 * ICE_CFG_BOOL field takes no value (it sets true; a boolean word right
 * after it sets that value unless the field is an ICE_CFG_SWITCH).
 * Positionals bind in order to args[]. The flags apply in order, after the
 * --config file, so a flag overrides the file.
 */
struct ice_cfg_cli {
	const char *tool;     /* prefix of messages, e.g. "ice-agent" */
	const char *synopsis; /* first line of --help: "usage: ..." */
	const struct ice_cfg_field *fields;
	size_t nfields;
	void *obj; /* the bound struct, with its defaults set */
	/* checks and completes obj; path is the --config file or NULL; may be NULL */
	int (*finish)(void *obj, const char *path, struct ice_cfg_err *err);
	const char *switch_flag; /* one more switch outside the table ("--once"), or NULL */
	bool *switch_set;	 /* set true when switch_flag is given */
	/* all optional below */
	const struct ice_cfg_table *more; /* further tables, after fields in --help */
	size_t nmore;
	const struct ice_cfg_field *args; /* positionals, in order */
	size_t nargs;
	const struct ice_cfg_cmd *cmds; /* subcommands: the first argument names one */
	size_t ncmds;
	char config_alias;  /* short flag for --config ('c'), or 0 */
	const char *epilog; /* last lines of --help, or NULL */
	/* out: the command chosen (cmds only) */
	const struct ice_cfg_cmd **cmd;
};

/* Load --config, then apply the flags over it in order (--log SPEC sets
 * the log), then cli->finish(). Returns 0 to run, 1 after printing --help
 * or, with --check-config, "TOOL: configuration OK" once all of that passed
 * (exit 0), or -EINVAL after printing what is wrong (exit 2):
 *   TOOL: flag -b: expected a size such as 4096, 4K, 64M or 1G, got 'x'
 *   TOOL: unknown flag '--sise'; did you mean '--size'? (see --help)
 *   TOOL CMD: expected FILE (see TOOL CMD --help) */
int ice_cfg_parse_args(const struct ice_cfg_cli *cli, int argc, char **argv);

/* ice_cfg_parse_args(), then the chosen command's run(obj): its exit
 * status, 0 after --help, 2 after a bad command line. */
int ice_cfg_main(const struct ice_cfg_cli *cli, int argc, char **argv);

#endif /* ICE_CONFIG_H */
