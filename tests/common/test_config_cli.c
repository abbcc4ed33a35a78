// SPDX-License-Identifier: Apache-2.0
/*
 * ice_config_cli: command lines over ice_cfg_field tables: short aliases,
 * --KEY=VALUE, switches, repeated flags, positionals, subcommands, --config
 * with flags over it, required fields, and the one error format.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_config.h"

struct opts {
	uint64_t minbytes, maxbytes;
	double factor;
	int iters;
	uint32_t qps;
	bool json;
	int verbose; /* switch, counted */
	int nkv;     /* repeated KEY=VALUE */
	char kv[64]; /* the last one */
	char file[64];
	char node[32];
	char **rest;
	int mode; /* enum */
	int ran;  /* which command ran */
};

static int verbose_set(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t len)
{
	(void)f;
	(void)text;
	(void)msg;
	(void)len;
	((struct opts *)obj)->verbose++;
	return 0;
}

static int kv_set(const struct ice_cfg_field *f, void *obj, const char *text, char *msg, size_t len)
{
	struct opts *o = obj;

	(void)f;
	if (strchr(text, '=') == NULL) {
		snprintf(msg, len, "expected KEY=VALUE, got '%s'", text);
		return -EINVAL;
	}
	o->nkv++;
	snprintf(o->kv, sizeof(o->kv), "%s", text);
	return 0;
}

static const char *const modes[] = {"fast", "slow", NULL};

#define O(f) .offset = offsetof(struct opts, f)
static const struct ice_cfg_field fields[] = {
	{.key = "minbytes", .type = ICE_CFG_SIZE, O(minbytes), .alias = 'b', .help = "smallest"},
	{.key = "maxbytes", .type = ICE_CFG_SIZE, O(maxbytes), .alias = 'e', .help = "largest"},
	{.key = "stepfactor",
	 .type = ICE_CFG_DOUBLE,
	 O(factor),
	 .min = 1.000001,
	 .max = 1e6,
	 .alias = 'f',
	 .help = "factor"},
	{.key = "iters", .type = ICE_CFG_I32, O(iters), .min = 1, .max = 1000, .alias = 'n'},
	{.key = "json", .type = ICE_CFG_BOOL, O(json), .flags = ICE_CFG_SWITCH},
	{.key = "verbose",
	 .type = ICE_CFG_FUNC,
	 .alias = 'v',
	 .flags = ICE_CFG_SWITCH,
	 .parse = verbose_set},
	{.key = "set", .type = ICE_CFG_FUNC, .arg = "KEY=VALUE", .parse = kv_set},
	{.key = "mode", .type = ICE_CFG_ENUM, O(mode), .choices = modes},
};
static const struct ice_cfg_field more_fields[] = {
	{.key = "qps", .type = ICE_CFG_U32, .min = 1, .max = 64, .alias = 'q', .help = "QPs"},
};
static const struct ice_cfg_field args[] = {
	{.key = "file",
	 .type = ICE_CFG_STRING,
	 O(file),
	 .size = 64,
	 .flags = ICE_CFG_REQUIRED,
	 .arg = "FILE"},
	{.key = "node", .type = ICE_CFG_STRING, O(node), .size = 32},
};

static char err_text[1024];

/* Run ice_cfg_parse_args (or ice_cfg_main with main_) on a NULL-ended
 * argument list; what it writes to stderr lands in err_text. */
static int run(const struct ice_cfg_cli *cli, bool main_, ...)
{
	char *argv[32];
	int argc = 0, ret, saved, fd;
	FILE *tmp = tmpfile();
	va_list ap;
	size_t n;

	va_start(ap, main_);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	assert_non_null(tmp);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	fd = fileno(tmp);
	dup2(fd, STDERR_FILENO);
	ret = main_ ? ice_cfg_main(cli, argc, argv) : ice_cfg_parse_args(cli, argc, argv);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(err_text, 1, sizeof(err_text) - 1, tmp);
	err_text[n] = '\0';
	fclose(tmp);
	return ret;
}

static struct opts o;
static uint32_t qps_obj;

static void reset(void)
{
	memset(&o, 0, sizeof(o));
	o.minbytes = 8;
	o.factor = 2;
	qps_obj = 1;
}

static struct ice_cfg_table more = {
	.title = "shared options", .fields = more_fields, .nfields = 1, .obj = &qps_obj};

static const struct ice_cfg_cli tool = {
	.tool = "t",
	.synopsis = "usage: t [options] FILE [NODE]",
	.fields = fields,
	.nfields = sizeof(fields) / sizeof(fields[0]),
	.obj = &o,
	.more = &more,
	.nmore = 1,
	.args = args,
	.nargs = 2,
};

/* nccl-tests' short flags, -XVALUE, --KEY=VALUE and the long forms. */
static void test_short_and_long(void **state)
{
	(void)state;
	reset();
	assert_int_equal(run(&tool, false, "t", "-b", "64", "-e64M", "-f", "4", "-n", "7", "-q",
			     "3", "f.yaml", NULL),
			 0);
	assert_int_equal(o.minbytes, 64);
	assert_int_equal(o.maxbytes, 64u << 20);
	assert_true(o.factor == 4);
	assert_int_equal(o.iters, 7);
	assert_int_equal(qps_obj, 3);
	assert_string_equal(o.file, "f.yaml");
	reset();
	assert_int_equal(run(&tool, false, "t", "f.yaml", "--minbytes=1K", "--maxbytes", "2K",
			     "--iters=9", "--qps", "2", "n0", NULL),
			 0);
	assert_int_equal(o.minbytes, 1024);
	assert_int_equal(o.maxbytes, 2048);
	assert_int_equal(o.iters, 9);
	assert_int_equal(qps_obj, 2);
	assert_string_equal(o.node, "n0");
}

/* Errors name the flag as typed and what was expected. */
static void test_errors(void **state)
{
	(void)state;
	reset();
	assert_int_equal(run(&tool, false, "t", "f", "-n", "foo", NULL), -EINVAL);
	assert_string_equal(err_text, "t: flag -n: expected an integer in [1, 1000], got 'foo'\n");
	assert_int_equal(run(&tool, false, "t", "f", "--qps=99", NULL), -EINVAL);
	assert_string_equal(err_text, "t: flag --qps: expected an integer in [1, 64], got '99'\n");
	assert_int_equal(run(&tool, false, "t", "f", "-b", "lots", NULL), -EINVAL);
	assert_non_null(strstr(err_text, "t: flag -b: expected a size such as"));
	assert_int_equal(run(&tool, false, "t", "f", "--itres", "3", NULL), -EINVAL);
	assert_string_equal(err_text,
			    "t: unknown flag '--itres'; did you mean '--iters'? (see --help)\n");
	assert_int_equal(run(&tool, false, "t", "f", "-x", NULL), -EINVAL);
	assert_string_equal(err_text, "t: unknown flag '-x' (see --help)\n");
	assert_int_equal(run(&tool, false, "t", "f", "--iters", NULL), -EINVAL);
	assert_string_equal(err_text, "t: flag --iters: expected N (see --help)\n");
	assert_int_equal(run(&tool, false, "t", "f", "--mode", "odd", NULL), -EINVAL);
	assert_string_equal(err_text, "t: flag --mode: expected one of: fast, slow; got 'odd'\n");
	assert_int_equal(run(&tool, false, "t", "--json=1", NULL), -EINVAL);
	assert_string_equal(err_text, "t: expected FILE (see --help)\n");
	assert_int_equal(run(&tool, false, "t", "a", "b", "c", NULL), -EINVAL);
	assert_string_equal(err_text, "t: unexpected 'c' (see --help)\n");
	assert_int_equal(run(&tool, false, "t", "a", "--set", "novalue", NULL), -EINVAL);
	assert_string_equal(err_text, "t: flag --set: expected KEY=VALUE, got 'novalue'\n");
}

/* Switches take no value; a FUNC flag runs once per occurrence. */
static void test_switches_and_repeats(void **state)
{
	(void)state;
	reset();
	/* "--json 1": a switch does not take the boolean word after it */
	assert_int_equal(run(&tool, false, "t", "--json", "1", "-v", "--verbose", "--set", "a=1",
			     "--set=b=2", NULL),
			 0);
	assert_true(o.json);
	assert_string_equal(o.file, "1");
	assert_int_equal(o.verbose, 2);
	assert_int_equal(o.nkv, 2);
	assert_string_equal(o.kv, "b=2");
	/* after "--", flags are positionals */
	reset();
	assert_int_equal(run(&tool, false, "t", "--", "-v", NULL), 0);
	assert_string_equal(o.file, "-v");
	assert_int_equal(o.verbose, 0);
}

/* --config FILE first, then the flags over it, whichever comes first. */
static void test_config_then_flags(void **state)
{
	char path[] = "/tmp/ice_test_cli_XXXXXX";
	const char *yaml = "minbytes: 4K\niters: 3\nqps: 5\nverbose: true\nset: x=1\n";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
	close(fd);
	reset();
	assert_int_equal(run(&tool, false, "t", "-n", "8", "--config", path, "f", NULL), 0);
	assert_int_equal(o.minbytes, 4096);
	assert_int_equal(o.iters, 8);
	assert_int_equal(qps_obj, 5);
	assert_int_equal(o.verbose, 1);
	assert_string_equal(o.kv, "x=1");
	unlink(path);
	snprintf(path, sizeof(path), "/tmp/ice_test_cli_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "iters: 0\n", 9), 9);
	close(fd);
	assert_int_equal(run(&tool, false, "t", "--config", path, "f", NULL), -EINVAL);
	assert_non_null(strstr(err_text, ":1:8: key 'iters': expected an integer in [1, 1000]"));
	unlink(path);
}

static int cmd_up(void *obj)
{
	((struct opts *)obj)->ran = 1;
	return 0;
}

static int cmd_exec(void *obj)
{
	((struct opts *)obj)->ran = 2;
	return 7;
}

static const struct ice_cfg_field up_fields[] = {
	{.key = "json", .type = ICE_CFG_BOOL, O(json), .flags = ICE_CFG_SWITCH},
};
static const struct ice_cfg_field exec_args[] = {
	{.key = "node", .type = ICE_CFG_STRING, O(node), .size = 32, .flags = ICE_CFG_REQUIRED},
	{.key = "cmd", .type = ICE_CFG_ARGV, O(rest), .flags = ICE_CFG_REQUIRED},
};
static const struct ice_cfg_field common_fields[] = {
	{.key = "fabric", .type = ICE_CFG_STRING, O(file), .size = 64, .flags = ICE_CFG_REQUIRED},
};
static const struct ice_cfg_cmd cmds[] = {
	{.name = "up", .help = "bring up", .fields = up_fields, .nfields = 1, .run = cmd_up},
	{.name = "exec", .help = "run", .args = exec_args, .nargs = 2, .run = cmd_exec},
};

/* Subcommands: their own flags and positionals, the tool's flags, run(). */
static void test_subcommands(void **state)
{
	struct ice_cfg_cli cli = {.tool = "fab",
				  .synopsis = "usage: fab COMMAND",
				  .fields = common_fields,
				  .nfields = 1,
				  .obj = &o,
				  .cmds = cmds,
				  .ncmds = 2};

	(void)state;
	reset();
	assert_int_equal(run(&cli, true, "fab", "up", "--json", "--fabric", "f1", NULL), 0);
	assert_int_equal(o.ran, 1);
	assert_true(o.json);
	assert_string_equal(o.file, "f1");
	reset();
	assert_int_equal(run(&cli, true, "fab", "exec", "--fabric", "f", "h0", "--", "ip", "-br",
			     "link", NULL),
			 7);
	assert_int_equal(o.ran, 2);
	assert_string_equal(o.node, "h0");
	assert_string_equal(o.rest[0], "ip");
	assert_string_equal(o.rest[1], "-br");
	assert_null(o.rest[3]);
	assert_int_equal(run(&cli, true, "fab", "exec", "--fabric", "f", "h0", NULL), 2);
	assert_string_equal(err_text, "fab exec: expected CMD (see --help)\n");
	assert_int_equal(run(&cli, true, "fab", "up", NULL), 2);
	assert_string_equal(err_text, "fab up: flag --fabric: required (see --help)\n");
	assert_int_equal(run(&cli, true, "fab", "down", NULL), 2);
	assert_string_equal(
		err_text, "fab: unknown command 'down'; expected one of: up, exec (see --help)\n");
	assert_int_equal(run(&cli, true, "fab", "exec", "--json", NULL), 2);
	assert_string_equal(err_text, "fab exec: unknown flag '--json' (see --help)\n");
}

/* --help prints the table (stdout) and asks for exit 0. */
static void test_help(void **state)
{
	char buf[4096];
	FILE *tmp = tmpfile();
	int saved = dup(STDOUT_FILENO);
	size_t n;

	(void)state;
	assert_non_null(tmp);
	fflush(stdout);
	dup2(fileno(tmp), STDOUT_FILENO);
	assert_int_equal(run(&tool, false, "t", "--bogus", "-h", NULL), 1);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	assert_non_null(strstr(buf, "usage: t [options] FILE [NODE]\n"));
	assert_non_null(strstr(buf, "  -b, --minbytes SIZE    smallest\n"));
	assert_non_null(strstr(buf, "      --mode fast|slow\n"));
	assert_non_null(strstr(buf, "shared options:\n  -q, --qps N"));
	assert_non_null(strstr(buf, "  -h, --help"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_and_long),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_switches_and_repeats),
		cmocka_unit_test(test_config_then_flags),
		cmocka_unit_test(test_subcommands),
		cmocka_unit_test(test_help),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
