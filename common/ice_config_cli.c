// SPDX-License-Identifier: Apache-2.0
/*
 * ice_config_cli: a tool's command line over its ice_cfg_field tables: long
 * flags and their short aliases, switches, positionals, subcommands,
 * --config FILE, --log SPEC and --help, with one help format and one error
 * format for every tool. Values go through the same parsers as YAML files
 * (ice_cfg_field_store), so a flag and a file accept the same things.
 *
 * The command line is read in one pass into a list of assignments; then the
 * --config file is bound, then the assignments are applied in order (so a
 * flag overrides the file), then the required fields are checked.
 */
#include "ice_config_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"

#define CLI_MAX_TABS   10
#define CLI_MAX_FIELDS 128
#define CLI_HELP_COL   25

struct cli_tab {
	const char *title;
	const struct ice_cfg_field *fields;
	size_t nfields;
	void *obj;
	bool seen[CLI_MAX_FIELDS];
};

enum cli_kind {
	CLI_SET,    /* a field's value */
	CLI_LOG,    /* --log SPEC */
	CLI_SWITCH, /* cli->switch_flag */
};

/* One assignment of the command line, applied after the --config file. */
struct cli_item {
	enum cli_kind kind;
	struct cli_tab *tab;
	const struct ice_cfg_field *f;
	const char *text; /* NULL: a switch */
	char flag[64];	  /* as typed ("-b", "--minbytes"); "" for a positional */
};

struct cli_state {
	const struct ice_cfg_cli *cli;
	const struct ice_cfg_cmd *cmd;
	char who[96]; /* prefix of messages: "tool" or "tool cmd" */
	struct cli_tab tabs[CLI_MAX_TABS];
	size_t ntabs;
	struct cli_tab args; /* positionals */
	const char *config;
	bool help;
	bool check;    /* --check-config: parse and check, then stop */
	char bad[512]; /* the first error while reading the line, or "" */
	struct cli_item *items;
	size_t nitems;
};

/* ---- names ----------------------------------------------------------------- */

/* key and flag name alike, '-' and '_' the same; flag ends at len */
static bool key_is(const char *key, const char *flag, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		char a = key[i] == '-' ? '_' : key[i], b = flag[i] == '-' ? '_' : flag[i];

		if (a == '\0' || a != b)
			return false;
	}
	return key[i] == '\0';
}

static const char *type_arg(const struct ice_cfg_field *f, char *buf, size_t len)
{
	size_t off = 0;

	if (f->arg != NULL)
		return f->arg;
	switch (f->type) {
	case ICE_CFG_INT:
	case ICE_CFG_UINT:
	case ICE_CFG_U32:
	case ICE_CFG_I32:
		return "N";
	case ICE_CFG_DOUBLE:
		return "X";
	case ICE_CFG_DURATION:
		return "TIME";
	case ICE_CFG_SIZE:
		return "SIZE";
	case ICE_CFG_RATE:
		return "RATE";
	case ICE_CFG_ENUM:
		buf[0] = '\0';
		for (size_t i = 0; f->choices != NULL && f->choices[i] != NULL; i++)
			ice_cfg_buf_add(buf, len, &off, "%s%s", i > 0 ? "|" : "", f->choices[i]);
		return buf;
	default:
		return "VALUE";
	}
}

/* A positional's name: its arg, or its key in capitals. */
static const char *arg_name(const struct ice_cfg_field *f, char *buf, size_t len)
{
	size_t i;

	if (f->arg != NULL)
		return f->arg;
	for (i = 0; f->key[i] != '\0' && i + 1 < len; i++)
		buf[i] = (char)toupper((unsigned char)f->key[i]);
	buf[i] = '\0';
	return buf;
}

static bool takes_value(const struct ice_cfg_field *f)
{
	return !(f->flags & ICE_CFG_SWITCH) && f->type != ICE_CFG_BOOL;
}

/* ---- help ------------------------------------------------------------------ */

/* "  LEFT   help" with help from column CLI_HELP_COL; '\n' in help indents. */
static void help_line(FILE *out, const char *left, const char *help)
{
	int n = fprintf(out, "  %s", left);

	if (help == NULL || help[0] == '\0') {
		fputc('\n', out);
		return;
	}
	if (n >= CLI_HELP_COL)
		fprintf(out, "\n%*s", CLI_HELP_COL, "");
	else
		fprintf(out, "%*s", CLI_HELP_COL - n, "");
	for (const char *p = help; *p != '\0'; p++) {
		fputc(*p, out);
		if (*p == '\n')
			fprintf(out, "%*s", CLI_HELP_COL, "");
	}
	fputc('\n', out);
}

static void field_help(FILE *out, const struct ice_cfg_field *f)
{
	char left[160], abuf[128], flag[64];
	size_t off = 0;

	snprintf(flag, sizeof(flag), "%s", f->key);
	for (char *p = flag; *p != '\0'; p++)
		if (*p == '_')
			*p = '-';
	if (f->alias != 0)
		ice_cfg_buf_add(left, sizeof(left), &off, "-%c, ", f->alias);
	else
		ice_cfg_buf_add(left, sizeof(left), &off, "    ");
	ice_cfg_buf_add(left, sizeof(left), &off, "--%s", flag);
	if (takes_value(f))
		ice_cfg_buf_add(left, sizeof(left), &off, " %s", type_arg(f, abuf, sizeof(abuf)));
	help_line(out, left, f->help);
}

void ice_cfg_usage(const struct ice_cfg_field *fields, size_t nfields, FILE *f)
{
	for (size_t i = 0; i < nfields; i++)
		field_help(f, &fields[i]);
}

/* " [options] A [B] REST..." of a command line */
static void synopsis_args(FILE *out, const struct ice_cfg_field *args, size_t nargs)
{
	char buf[64];

	for (size_t i = 0; i < nargs; i++) {
		const char *name = arg_name(&args[i], buf, sizeof(buf));
		bool req = args[i].flags & ICE_CFG_REQUIRED;

		fprintf(out, " %s%s%s%s", req ? "" : "[", name,
			args[i].type == ICE_CFG_ARGV ? "..." : "", req ? "" : "]");
	}
}

static void builtin_help(FILE *out, const struct ice_cfg_cli *cli)
{
	help_line(out, cli->config_alias == 'c' ? "-c, --config FILE" : "    --config FILE",
		  "YAML file of these keys ('_' for '-'); flags override it");
	help_line(out, "    --log SPEC", "logging: LEVEL[,debug=SUB+SUB] (also ICE_LOG)");
	help_line(out, "    --check-config", "check the configuration (file and flags), then exit");
	help_line(out, "-h, --help", "this help");
}

static void print_help(const struct cli_state *st)
{
	const struct ice_cfg_cli *cli = st->cli;
	char buf[64];
	FILE *out = stdout;

	if (st->cmd != NULL) {
		fprintf(out, "usage: %s [options]", st->who);
		synopsis_args(out, st->cmd->args, st->cmd->nargs);
		fprintf(out, "\n%s\n", st->cmd->help != NULL ? st->cmd->help : "");
	} else {
		fprintf(out, "%s\n", cli->synopsis);
	}
	if (cli->cmds != NULL && st->cmd == NULL) {
		fprintf(out, "commands ('%s COMMAND --help' shows a command's options):\n",
			cli->tool);
		for (size_t i = 0; i < cli->ncmds; i++) {
			char left[256];
			FILE *m = fmemopen(left, sizeof(left), "w");

			if (m == NULL)
				continue;
			fprintf(m, "%s", cli->cmds[i].name);
			synopsis_args(m, cli->cmds[i].args, cli->cmds[i].nargs);
			fputc('\0', m);
			fclose(m);
			left[sizeof(left) - 1] = '\0';
			help_line(out, left, cli->cmds[i].help);
		}
	}
	if (st->args.nfields > 0) {
		fprintf(out, "arguments:\n");
		for (size_t i = 0; i < st->args.nfields; i++)
			help_line(out, arg_name(&st->args.fields[i], buf, sizeof(buf)),
				  st->args.fields[i].help);
	}
	for (size_t t = 0; t < st->ntabs; t++) {
		if (st->tabs[t].nfields == 0)
			continue;
		if (t == 0 || st->tabs[t].title != NULL)
			fprintf(out, "%s:\n",
				st->tabs[t].title != NULL ? st->tabs[t].title : "options");
		ice_cfg_usage(st->tabs[t].fields, st->tabs[t].nfields, out);
	}
	if (st->ntabs == 0 || st->tabs[0].nfields == 0)
		fprintf(out, "options:\n");
	builtin_help(out, cli);
	if (cli->epilog != NULL)
		fprintf(out, "%s", cli->epilog);
}

/* ---- reading the command line ---------------------------------------------- */

static void __attribute__((format(printf, 2, 3))) bad(struct cli_state *st, const char *fmt, ...)
{
	va_list ap;

	if (st->bad[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(st->bad, sizeof(st->bad), fmt, ap);
	va_end(ap);
}

static const struct ice_cfg_field *find_long(struct cli_state *st, const char *flag, size_t len,
					     struct cli_tab **tab)
{
	for (size_t t = 0; t < st->ntabs; t++)
		for (size_t i = 0; i < st->tabs[t].nfields; i++)
			if (key_is(st->tabs[t].fields[i].key, flag, len)) {
				*tab = &st->tabs[t];
				return &st->tabs[t].fields[i];
			}
	return NULL;
}

static const struct ice_cfg_field *find_short(struct cli_state *st, char c, struct cli_tab **tab)
{
	for (size_t t = 0; t < st->ntabs; t++)
		for (size_t i = 0; i < st->tabs[t].nfields; i++)
			if (st->tabs[t].fields[i].alias == c) {
				*tab = &st->tabs[t];
				return &st->tabs[t].fields[i];
			}
	return NULL;
}

static struct cli_item *item_add(struct cli_state *st, enum cli_kind kind, struct cli_tab *tab,
				 const struct ice_cfg_field *f, const char *text, const char *flag,
				 size_t flen)
{
	struct cli_item *it = &st->items[st->nitems++];

	it->kind = kind;
	it->tab = tab;
	it->f = f;
	it->text = text;
	snprintf(it->flag, sizeof(it->flag), "%.*s", (int)flen, flag);
	return it;
}

/* "unknown flag '--x'; did you mean '--y'?" over every table */
static void unknown_flag(struct cli_state *st, const char *arg, const char *name, size_t len)
{
	const char *best = NULL;
	size_t best_d = 3;
	char key[64], b[64];

	snprintf(key, sizeof(key), "%.*s", (int)len, name);
	for (char *p = key; *p != '\0'; p++)
		if (*p == '-')
			*p = '_';
	for (size_t t = 0; len > 0 && t < st->ntabs; t++) {
		for (size_t i = 0; i < st->tabs[t].nfields; i++) {
			size_t d = ice_cfg_edit_distance(key, st->tabs[t].fields[i].key, 2);

			if (d < best_d) {
				best_d = d;
				best = st->tabs[t].fields[i].key;
			}
		}
	}
	if (best == NULL) {
		bad(st, "unknown flag '%s'", arg);
		return;
	}
	snprintf(b, sizeof(b), "%s", best);
	for (char *p = b; *p != '\0'; p++)
		if (*p == '_')
			*p = '-';
	bad(st, "unknown flag '%s'; did you mean '--%s'?", arg, b);
}

/* One flag at argv[*i]: record it; *i moves past its value. */
static void read_flag(struct cli_state *st, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *name, *eq, *text = NULL;
	const struct ice_cfg_field *f;
	struct cli_tab *tab = NULL;
	size_t len, flen;

	if (a[1] == '-') { /* --key, --key=value */
		name = a + 2;
		eq = strchr(name, '=');
		len = eq != NULL ? (size_t)(eq - name) : strlen(name);
		flen = len + 2;
		if (key_is("help", name, len)) {
			st->help = true;
			return;
		}
		f = find_long(st, name, len, &tab);
		if (f == NULL && eq == NULL && key_is("check-config", name, len)) {
			st->check = true;
			return;
		}
	} else { /* -a, -aVALUE */
		name = a + 1;
		len = 1;
		flen = 2;
		eq = a[2] != '\0' ? a + 1 : NULL; /* the value follows the letter */
		if (a[1] == 'h' && a[2] == '\0') {
			st->help = true;
			return;
		}
		f = find_short(st, a[1], &tab);
		if (f == NULL && a[1] == st->cli->config_alias)
			name = "config", len = 6;
	}
	if (f == NULL && key_is("config", name, len)) {
		if (eq != NULL)
			st->config = eq + 1;
		else if (*i + 1 < argc)
			st->config = argv[++*i];
		else
			bad(st, "flag %.*s: expected a YAML file", (int)flen, a);
		return;
	}
	if (f == NULL && key_is("log", name, len)) {
		if (eq != NULL || *i + 1 < argc)
			item_add(st, CLI_LOG, NULL, NULL, eq != NULL ? eq + 1 : argv[++*i], a,
				 flen);
		else
			bad(st, "flag --log: expected LEVEL[,debug=SUB+SUB]");
		return;
	}
	if (f == NULL && st->cli->switch_flag != NULL && strcmp(a, st->cli->switch_flag) == 0) {
		item_add(st, CLI_SWITCH, NULL, NULL, NULL, a, flen);
		return;
	}
	if (f == NULL) {
		unknown_flag(st, a, a[1] == '-' ? name : "", a[1] == '-' ? len : 0);
		return;
	}
	if (eq != NULL) {
		text = eq + 1;
		if (!takes_value(f) && f->type != ICE_CFG_BOOL) {
			bad(st, "flag %.*s: expected no value, got '%s'", (int)flen, a, text);
			return;
		}
	} else if (takes_value(f)) {
		if (*i + 1 >= argc) {
			char abuf[128];

			bad(st, "flag %s: expected %s", a, type_arg(f, abuf, sizeof(abuf)));
			return;
		}
		text = argv[++*i];
	} else if (f->type == ICE_CFG_BOOL) {
		bool v;

		text = "true";
		if (!(f->flags & ICE_CFG_SWITCH) && *i + 1 < argc &&
		    ice_cfg_parse_bool(argv[*i + 1], &v) == 0)
			text = argv[++*i];
	}
	item_add(st, CLI_SET, tab, f, text, a, flen);
}

static void read_line(struct cli_state *st, int argc, char **argv, int first)
{
	size_t npos = 0;
	bool flags = true;

	for (int i = first; i < argc; i++) {
		const char *a = argv[i];

		if (flags && strcmp(a, "--") == 0) {
			flags = false;
		} else if (flags && a[0] == '-' && a[1] != '\0') {
			read_flag(st, argc, argv, &i);
		} else if (npos < st->args.nfields && st->args.fields[npos].type == ICE_CFG_ARGV) {
			const struct ice_cfg_field *f = &st->args.fields[npos];

			*(char ***)((char *)st->args.obj + f->offset) = &argv[i];
			st->args.seen[npos] = true;
			return;
		} else if (npos < st->args.nfields) {
			item_add(st, CLI_SET, &st->args, &st->args.fields[npos], a, "", 0);
			npos++;
		} else {
			bad(st, "unexpected '%s'", a);
		}
	}
}

/* ---- applying --------------------------------------------------------------- */

static int apply_config(struct cli_state *st, struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc = ice_yaml_load_file(st->config, err);
	const struct ice_yaml_node *root;
	char msg[sizeof(err->msg)];
	int ret = 0;

	if (doc == NULL)
		return -EINVAL;
	root = ice_yaml_root(doc);
	if (ice_yaml_kind(root) != ICE_YAML_MAP) {
		ice_cfg_errf(err, doc, root, NULL, "expected a mapping of keys");
		ret = -EINVAL;
	}
	for (size_t k = 0; ret == 0 && k < ice_yaml_len(root); k++) {
		const struct ice_yaml_node *kn = ice_yaml_key_at(root, k),
					   *v = ice_yaml_at(root, k);
		const char *key = ice_yaml_scalar(kn);
		const struct ice_cfg_field *f = NULL;
		struct cli_tab *tab = NULL;

		f = find_long(st, key, strlen(key), &tab);
		if (f == NULL) {
			ice_cfg_unknown_key_msg(st->tabs[0].fields, st->tabs[0].nfields, key, msg,
						sizeof(msg));
			ice_cfg_errf(err, doc, kn, key, "%s", msg);
			ret = -EINVAL;
		} else if (ice_yaml_kind(v) != ICE_YAML_SCALAR) {
			ice_cfg_errf(err, doc, v, key, "expected a scalar value, got %s",
				     ice_yaml_kind_name(ice_yaml_kind(v)));
			ret = -EINVAL;
		} else if (ice_cfg_field_store(f, tab->obj, ice_yaml_scalar(v), msg, sizeof(msg)) <
			   0) {
			ice_cfg_errf(err, doc, v, key, "%s", msg);
			ret = -EINVAL;
		} else {
			tab->seen[f - tab->fields] = true;
		}
	}
	ice_yaml_free(doc);
	return ret;
}

static int apply_item(struct cli_state *st, const struct cli_item *it)
{
	char msg[384], buf[64];
	const struct ice_cfg_field *f = it->f;
	int ret;

	if (it->kind == CLI_LOG) {
		if (ice_log_setup(it->text) >= 0)
			return 0;
		fprintf(stderr, "%s: flag --log: expected LEVEL[,debug=SUB+SUB], got '%s'\n",
			st->who, it->text);
		return -EINVAL;
	}
	if (it->kind == CLI_SWITCH) {
		*st->cli->switch_set = true;
		return 0;
	}
	if (f->type == ICE_CFG_FUNC && it->text == NULL)
		ret = f->parse(f, it->tab->obj, NULL, msg, sizeof(msg));
	else
		ret = ice_cfg_field_store(f, it->tab->obj, it->text, msg, sizeof(msg));
	if (ret < 0) {
		if (it->flag[0] != '\0')
			fprintf(stderr, "%s: flag %s: %s\n", st->who, it->flag, msg);
		else
			fprintf(stderr, "%s: argument %s: %s\n", st->who,
				arg_name(f, buf, sizeof(buf)), msg);
		return -EINVAL;
	}
	it->tab->seen[f - it->tab->fields] = true;
	return 0;
}

static int check_required(struct cli_state *st)
{
	char buf[64];

	for (size_t i = 0; i < st->args.nfields; i++)
		if ((st->args.fields[i].flags & ICE_CFG_REQUIRED) && !st->args.seen[i]) {
			fprintf(stderr, "%s: expected %s (see --help)\n", st->who,
				arg_name(&st->args.fields[i], buf, sizeof(buf)));
			return -EINVAL;
		}
	for (size_t t = 0; t < st->ntabs; t++)
		for (size_t i = 0; i < st->tabs[t].nfields; i++) {
			const struct ice_cfg_field *f = &st->tabs[t].fields[i];

			if (!(f->flags & ICE_CFG_REQUIRED) || st->tabs[t].seen[i])
				continue;
			snprintf(buf, sizeof(buf), "%s", f->key);
			for (char *p = buf; *p != '\0'; p++)
				if (*p == '_')
					*p = '-';
			fprintf(stderr, "%s: flag --%s: required (see --help)\n", st->who, buf);
			return -EINVAL;
		}
	return 0;
}

static void tab_add(struct cli_state *st, const char *title, const struct ice_cfg_field *fields,
		    size_t n, void *obj)
{
	struct cli_tab *t;

	if (st->ntabs >= CLI_MAX_TABS || n > CLI_MAX_FIELDS)
		return;
	t = &st->tabs[st->ntabs++];
	t->title = title;
	t->fields = fields;
	t->nfields = n;
	t->obj = obj;
}

/* 0 run, 1 help printed, -EINVAL error printed */
static int parse(struct cli_state *st, const struct ice_cfg_cli *cli, int argc, char **argv)
{
	struct ice_cfg_err err;
	int first = 1, ret = 0;

	memset(st, 0, sizeof(*st));
	st->cli = cli;
	snprintf(st->who, sizeof(st->who), "%s", cli->tool);
	if (cli->cmds != NULL) {
		const char *name = argc > 1 ? argv[1] : "";

		if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
			print_help(st);
			return 1;
		}
		for (size_t i = 0; i < cli->ncmds && st->cmd == NULL; i++)
			if (strcmp(cli->cmds[i].name, name) == 0)
				st->cmd = &cli->cmds[i];
		if (st->cmd == NULL) {
			if (argc > 1)
				fprintf(stderr,
					"%s: unknown command '%s'; expected one of:", cli->tool,
					name);
			else
				fprintf(stderr, "%s: expected a command, one of:", cli->tool);
			for (size_t i = 0; i < cli->ncmds; i++)
				fprintf(stderr, "%s %s", i > 0 ? "," : "", cli->cmds[i].name);
			fprintf(stderr, " (see --help)\n");
			return -EINVAL;
		}
		if (cli->cmd != NULL)
			*cli->cmd = st->cmd;
		snprintf(st->who, sizeof(st->who), "%s %s", cli->tool, st->cmd->name);
		tab_add(st, NULL, st->cmd->fields, st->cmd->nfields, cli->obj);
		st->args.fields = st->cmd->args;
		st->args.nfields = st->cmd->nargs;
		first = 2;
	} else {
		st->args.fields = cli->args;
		st->args.nfields = cli->nargs;
	}
	st->args.obj = cli->obj;
	tab_add(st, st->cmd != NULL ? "common options" : NULL, cli->fields, cli->nfields, cli->obj);
	for (size_t i = 0; i < cli->nmore; i++)
		tab_add(st, cli->more[i].title, cli->more[i].fields, cli->more[i].nfields,
			cli->more[i].obj);
	st->items = calloc((size_t)argc + 1, sizeof(*st->items));
	if (st->items == NULL) {
		fprintf(stderr, "%s: out of memory\n", cli->tool);
		return -EINVAL;
	}
	read_line(st, argc, argv, first);
	if (st->help) {
		print_help(st);
		ret = 1;
		goto out;
	}
	if (st->bad[0] != '\0') {
		fprintf(stderr, "%s: %s (see --help)\n", st->who, st->bad);
		ret = -EINVAL;
		goto out;
	}
	if (st->config != NULL && apply_config(st, &err) < 0) {
		char buf[768];

		fprintf(stderr, "%s: %s\n", st->who, ice_cfg_err_str(&err, buf, sizeof(buf)));
		ret = -EINVAL;
		goto out;
	}
	for (size_t i = 0; ret == 0 && i < st->nitems; i++)
		ret = apply_item(st, &st->items[i]);
	if (ret == 0)
		ret = check_required(st);
	if (ret == 0 && cli->finish != NULL && cli->finish(cli->obj, st->config, &err) < 0) {
		char buf[768];

		fprintf(stderr, "%s: %s\n", st->who, ice_cfg_err_str(&err, buf, sizeof(buf)));
		ret = -EINVAL;
	}
	if (ret == 0 && st->check) {
		printf("%s: configuration OK%s%s\n", st->who, st->config ? " in " : "",
		       st->config ? st->config : "");
		ret = 1;
	}
out:
	free(st->items);
	st->items = NULL;
	return ret;
}

int ice_cfg_parse_args(const struct ice_cfg_cli *cli, int argc, char **argv)
{
	struct cli_state *st = malloc(sizeof(*st));
	int ret;

	if (st == NULL) {
		fprintf(stderr, "%s: out of memory\n", cli->tool);
		return -EINVAL;
	}
	ret = parse(st, cli, argc, argv);
	free(st);
	return ret;
}

int ice_cfg_main(const struct ice_cfg_cli *cli, int argc, char **argv)
{
	struct cli_state *st = malloc(sizeof(*st));
	int ret;

	if (st == NULL) {
		fprintf(stderr, "%s: out of memory\n", cli->tool);
		return 2;
	}
	ret = parse(st, cli, argc, argv);
	if (ret == 0 && st->cmd != NULL && st->cmd->run != NULL)
		ret = st->cmd->run(cli->obj);
	else
		ret = ret > 0 ? 0 : ret < 0 ? 2 : 0;
	free(st);
	return ret;
}
