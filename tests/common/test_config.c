// SPDX-License-Identifier: Apache-2.0
/* Unit tests for common/ice_config: YAML loading, navigation, binding. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_config.h"
#include "ice_time.h"

struct sample {
	bool on;
	int64_t offset;
	uint64_t count;
	uint32_t rate_mbit;
	double ratio;
	char name[8];
	uint64_t timeout_ns;
	uint64_t buf_bytes;
	uint64_t link_bps;
	int mode;
};

static const char *const mode_names[] = {"off", "reactive", "proactive", NULL};

static const struct ice_cfg_field sample_fields[] = {
	{.key = "on", .type = ICE_CFG_BOOL, .offset = offsetof(struct sample, on)},
	{.key = "offset",
	 .type = ICE_CFG_INT,
	 .offset = offsetof(struct sample, offset),
	 .min = -100,
	 .max = 100},
	{.key = "count", .type = ICE_CFG_UINT, .offset = offsetof(struct sample, count)},
	{.key = "rp_ai_rate",
	 .type = ICE_CFG_U32,
	 .offset = offsetof(struct sample, rate_mbit),
	 .min = 1,
	 .max = 400000},
	{.key = "ratio",
	 .type = ICE_CFG_DOUBLE,
	 .offset = offsetof(struct sample, ratio),
	 .min = 0,
	 .max = 1},
	{.key = "name",
	 .type = ICE_CFG_STRING,
	 .offset = offsetof(struct sample, name),
	 .size = sizeof(((struct sample *)0)->name)},
	{.key = "timeout",
	 .type = ICE_CFG_DURATION,
	 .offset = offsetof(struct sample, timeout_ns),
	 .min = 1000,
	 .max = 10 * ICE_NSEC_PER_SEC,
	 .unit = ICE_NSEC_PER_USEC},
	{.key = "buf", .type = ICE_CFG_SIZE, .offset = offsetof(struct sample, buf_bytes)},
	{.key = "link", .type = ICE_CFG_RATE, .offset = offsetof(struct sample, link_bps)},
	{.key = "mode",
	 .type = ICE_CFG_ENUM,
	 .offset = offsetof(struct sample, mode),
	 .choices = mode_names},
};

#define NFIELDS (sizeof(sample_fields) / sizeof(sample_fields[0]))

static struct ice_yaml_doc *load(const char *text, struct ice_cfg_err *err)
{
	memset(err, 0, sizeof(*err));
	return ice_yaml_load_string("t.yaml", text, strlen(text), err);
}

/* Load text, bind its "s" section (or the root) and return bind's result. */
static int bind_text(const char *text, const char *section, unsigned flags, struct sample *s,
		     struct ice_cfg_err *err)
{
	struct ice_yaml_doc *doc = load(text, err);
	const struct ice_yaml_node *map;
	int ret;

	assert_non_null(doc);
	map = ice_yaml_root(doc);
	if (section != NULL)
		map = ice_yaml_get(map, section);
	ret = ice_cfg_bind(doc, map, section, sample_fields, NFIELDS, s, flags, err);
	ice_yaml_free(doc);
	return ret;
}

static void assert_err_at(const struct ice_cfg_err *err, int line, int column, const char *key)
{
	assert_string_equal(err->file, "t.yaml");
	assert_int_equal(err->line, line);
	assert_int_equal(err->column, column);
	assert_string_equal(err->key, key);
}

static void test_load_string_navigate(void **state)
{
	static const char text[] = "# comment\n"
				   "top:\n"
				   "  name: alpha\n"
				   "  list: [1, two, {k: v}]\n"
				   "  nested:\n"
				   "    deep: \"quoted\"\n"
				   "seq:\n"
				   "  - a\n"
				   "  - b\n";
	struct ice_cfg_err err;
	struct ice_yaml_doc *doc = load(text, &err);
	const struct ice_yaml_node *root, *top, *list, *seq, *n;

	(void)state;
	assert_non_null(doc);
	assert_string_equal(ice_yaml_doc_name(doc), "t.yaml");
	root = ice_yaml_root(doc);
	assert_int_equal(ice_yaml_kind(root), ICE_YAML_MAP);
	assert_int_equal(ice_yaml_len(root), 2);
	assert_string_equal(ice_yaml_scalar(ice_yaml_key_at(root, 0)), "top");
	assert_string_equal(ice_yaml_scalar(ice_yaml_key_at(root, 1)), "seq");
	assert_null(ice_yaml_key_at(root, 2));
	assert_null(ice_yaml_at(root, 2));

	top = ice_yaml_get(root, "top");
	assert_ptr_equal(top, ice_yaml_at(root, 0));
	assert_int_equal(ice_yaml_kind(top), ICE_YAML_MAP);
	assert_int_equal(ice_yaml_line(top), 3);
	assert_int_equal(ice_yaml_column(top), 3);
	assert_null(ice_yaml_scalar(top));

	n = ice_yaml_get(top, "name");
	assert_string_equal(ice_yaml_scalar(n), "alpha");
	assert_int_equal(ice_yaml_line(n), 3);
	assert_int_equal(ice_yaml_column(n), 9);
	assert_int_equal(ice_yaml_len(n), 0);
	assert_null(ice_yaml_at(n, 0));
	assert_null(ice_yaml_get(n, "x"));
	assert_null(ice_yaml_key_at(n, 0));

	list = ice_yaml_get(top, "list");
	assert_int_equal(ice_yaml_kind(list), ICE_YAML_SEQ);
	assert_int_equal(ice_yaml_len(list), 3);
	assert_string_equal(ice_yaml_scalar(ice_yaml_at(list, 0)), "1");
	assert_string_equal(ice_yaml_scalar(ice_yaml_at(list, 1)), "two");
	assert_int_equal(ice_yaml_column(ice_yaml_at(list, 1)), 13);
	assert_string_equal(ice_yaml_scalar(ice_yaml_get(ice_yaml_at(list, 2), "k")), "v");
	assert_null(ice_yaml_at(list, 3));
	assert_null(ice_yaml_key_at(list, 0));
	assert_null(ice_yaml_get(list, "k"));

	n = ice_yaml_get(ice_yaml_get(top, "nested"), "deep");
	assert_string_equal(ice_yaml_scalar(n), "quoted");
	assert_int_equal(ice_yaml_line(n), 6);
	assert_int_equal(ice_yaml_column(n), 11);

	seq = ice_yaml_get(root, "seq");
	assert_int_equal(ice_yaml_len(seq), 2);
	assert_string_equal(ice_yaml_scalar(ice_yaml_at(seq, 1)), "b");
	assert_int_equal(ice_yaml_line(ice_yaml_at(seq, 1)), 9);
	assert_null(ice_yaml_get(root, "missing"));
	ice_yaml_free(doc);
}

static void test_null_safe(void **state)
{
	(void)state;
	ice_yaml_free(NULL);
	assert_null(ice_yaml_root(NULL));
	assert_int_equal(ice_yaml_len(NULL), 0);
	assert_null(ice_yaml_get(NULL, "x"));
	assert_null(ice_yaml_at(NULL, 0));
	assert_null(ice_yaml_scalar(NULL));
	assert_int_equal(ice_yaml_line(NULL), 0);
	/* Absent section: nothing to bind, obj unchanged. */
	assert_int_equal(ice_cfg_bind(NULL, NULL, "x", sample_fields, NFIELDS, NULL, 0, NULL), 0);
}

static void test_empty_document(void **state)
{
	static const char *const texts[] = {"", "# only a comment\n", "---\n", "\n\n"};
	struct ice_cfg_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct ice_yaml_doc *doc = load(texts[i], &err);
		const struct ice_yaml_node *root;

		assert_non_null(doc);
		root = ice_yaml_root(doc);
		assert_non_null(root);
		assert_int_equal(ice_yaml_kind(root), ICE_YAML_MAP);
		assert_int_equal(ice_yaml_len(root), 0);
		assert_null(ice_yaml_get(root, "x"));
		ice_yaml_free(doc);
	}
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/ice_test_config_XXXXXX";
	static const char text[] = "dcqcn:\n  rp_ai_rate: 50\n";
	struct ice_cfg_err err;
	struct ice_yaml_doc *doc;
	struct sample s = {0};
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);

	doc = ice_yaml_load_file(path, &err);
	assert_non_null(doc);
	assert_string_equal(ice_yaml_doc_name(doc), path);
	assert_int_equal(ice_cfg_bind(doc, ice_yaml_get(ice_yaml_root(doc), "dcqcn"), "dcqcn",
				      sample_fields, NFIELDS, &s, ICE_CFG_STRICT, &err),
			 0);
	assert_int_equal(s.rate_mbit, 50);
	ice_yaml_free(doc);

	/* A syntax error in a file names the file. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "a: [1, 2\n", 9), 9);
	close(fd);
	errno = 0;
	assert_null(ice_yaml_load_file(path, &err));
	assert_int_equal(errno, EINVAL);
	assert_string_equal(err.file, path);
	assert_true(err.line > 0);
	unlink(path);

	errno = 0;
	assert_null(ice_yaml_load_file(path, &err));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err.file, path);
	assert_non_null(strstr(err.msg, strerror(ENOENT)));

	errno = 0;
	assert_null(ice_yaml_load_file("/tmp", &err));
	assert_int_equal(errno, EISDIR);
	assert_non_null(strstr(err.msg, strerror(EISDIR)));
}

static void test_bind_all_types(void **state)
{
	static const char text[] = "s:\n"
				   "  on: yes\n"
				   "  offset: -42\n"
				   "  count: 0x10\n"
				   "  rp_ai_rate: 400000\n"
				   "  ratio: 0.25\n"
				   "  name: \"abcdefg\"\n"
				   "  timeout: 300us\n"
				   "  buf: 64K\n"
				   "  link: 200mbit\n"
				   "  mode: proactive\n"
				   "  unrelated: [ignored]\n";
	struct sample s = {0};
	struct ice_cfg_err err;

	(void)state;
	assert_int_equal(bind_text(text, "s", 0, &s, &err), 0);
	assert_true(s.on);
	assert_int_equal(s.offset, -42);
	assert_int_equal(s.count, 16);
	assert_int_equal(s.rate_mbit, 400000);
	assert_true(s.ratio == 0.25);
	assert_string_equal(s.name, "abcdefg");
	assert_int_equal(s.timeout_ns, 300 * ICE_NSEC_PER_USEC);
	assert_int_equal(s.buf_bytes, 64 * 1024);
	assert_int_equal(s.link_bps, 200000000ull);
	assert_int_equal(s.mode, 2);

	/* Bare durations are in the field's unit (us); other spellings. */
	assert_int_equal(bind_text("timeout: 7\non: Off\ncount: 18446744073709551615\n"
				   "offset: 100\nratio: 1e0\nbuf: 512\nlink: 10gbit\nmode: off\n",
				   NULL, 0, &s, &err),
			 0);
	assert_int_equal(s.timeout_ns, 7 * ICE_NSEC_PER_USEC);
	assert_false(s.on);
	assert_int_equal(s.count, UINT64_MAX);
	assert_int_equal(s.offset, 100);
	assert_true(s.ratio == 1.0);
	assert_int_equal(s.buf_bytes, 512);
	assert_int_equal(s.link_bps, 10000000000ull);
	assert_int_equal(s.mode, 0);
}

static void test_absent_keys_unchanged(void **state)
{
	struct sample s = {.rate_mbit = 123, .mode = 1};
	struct ice_cfg_err err;

	(void)state;
	assert_int_equal(bind_text("s:\n  on: true\n", "s", ICE_CFG_STRICT, &s, &err), 0);
	assert_true(s.on);
	assert_int_equal(s.rate_mbit, 123);
	assert_int_equal(s.mode, 1);
}

static void test_range_error_position(void **state)
{
	static const char text[] = "# DCQCN\n"
				   "dcqcn:\n"
				   "  on: true\n"
				   "\n"
				   "\n"
				   "\n"
				   "  rp_ai_rate:  fast\n";
	struct sample s = {0};
	struct ice_cfg_err err;
	char buf[1024];

	(void)state;
	assert_int_equal(bind_text(text, "dcqcn", 0, &s, &err), -EINVAL);
	assert_err_at(&err, 7, 16, "dcqcn.rp_ai_rate");
	assert_string_equal(err.msg, "expected an integer in [1, 400000], got 'fast'");
	assert_string_equal(ice_cfg_err_str(&err, buf, sizeof(buf)),
			    "t.yaml:7:16: key 'dcqcn.rp_ai_rate': "
			    "expected an integer in [1, 400000], got 'fast'");

	assert_int_equal(bind_text("dcqcn:\n  rp_ai_rate: 400001\n", "dcqcn", 0, &s, &err),
			 -EINVAL);
	assert_err_at(&err, 2, 15, "dcqcn.rp_ai_rate");
	assert_string_equal(err.msg, "expected an integer in [1, 400000], got '400001'");

	assert_int_equal(bind_text("rp_ai_rate: 0\n", NULL, 0, &s, &err), -EINVAL);
	assert_err_at(&err, 1, 13, "rp_ai_rate");
}

/* One bad value per row: the message that must come back. */
static void test_bad_values(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{"count: -1", "expected an integer in [0, 18446744073709551615], got '-1'"},
		{"count: 18446744073709551616",
		 "expected an integer in [0, 18446744073709551615], got '18446744073709551616'"},
		{"count: 12abc", "expected an integer in [0, 18446744073709551615], got '12abc'"},
		{"count: 1.5", "expected an integer in [0, 18446744073709551615], got '1.5'"},
		{"count: 0x", "expected an integer in [0, 18446744073709551615], got '0x'"},
		{"count: ''", "expected an integer in [0, 18446744073709551615], got ''"},
		{"rp_ai_rate: 4294967296", "expected an integer in [1, 400000], got '4294967296'"},
		{"offset: -101", "expected an integer in [-100, 100], got '-101'"},
		{"offset: --1", "expected an integer in [-100, 100], got '--1'"},
		{"offset: 5 ", NULL}, /* YAML strips the space: valid */
		{"ratio: 1.5", "expected a number in [0, 1], got '1.5'"},
		{"ratio: nan", "expected a number in [0, 1], got 'nan'"},
		{"ratio: 0.5x", "expected a number in [0, 1], got '0.5x'"},
		{"on: maybe", "expected a boolean (true/false, yes/no, on/off, 1/0), got 'maybe'"},
		{"name: abcdefgh", "expected a string of at most 7 characters, got 8"},
		{"timeout: 11s",
		 "expected a duration such as 300us, 4ms or 2s (bare numbers in us) in [1us, 10s], "
		 "got '11s'"},
		{"timeout: 999ns",
		 "expected a duration such as 300us, 4ms or 2s (bare numbers in us) in [1us, 10s], "
		 "got '999ns'"},
		{"timeout: 3 weeks",
		 "expected a duration such as 300us, 4ms or 2s (bare numbers in us) in [1us, 10s], "
		 "got '3 weeks'"},
		{"buf: 4Q", "expected a size such as 4096, 4K, 64M or 1G, got '4Q'"},
		{"link: fast", "expected a rate such as 200mbit or 10gbit, got 'fast'"},
		{"mode: sometimes", "expected one of: off, reactive, proactive; got 'sometimes'"},
		{"mode: [off]", "expected a scalar value, got a sequence"},
		{"on: {a: 1}", "expected a scalar value, got a mapping"},
	};
	struct ice_cfg_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sample s = {0};
		int ret = bind_text(cases[i].text, NULL, 0, &s, &err);

		if (cases[i].msg == NULL) {
			assert_int_equal(ret, 0);
			continue;
		}
		if (ret != -EINVAL || strcmp(err.msg, cases[i].msg) != 0)
			fail_msg("'%s': ret %d, msg '%s', want '%s'", cases[i].text, ret, err.msg,
				 cases[i].msg);
		assert_int_equal(err.line, 1);
		assert_true(err.column > 1);
	}
}

static void test_strict_unknown_key(void **state)
{
	struct sample s = {0};
	struct ice_cfg_err err;

	(void)state;
	/* Ignored without ICE_CFG_STRICT. */
	assert_int_equal(bind_text("s:\n  rp_ai_rte: 5\n", "s", 0, &s, &err), 0);
	assert_int_equal(bind_text("s:\n  on: 1\n  rp_ai_rte: 5\n", "s", ICE_CFG_STRICT, &s, &err),
			 -EINVAL);
	assert_err_at(&err, 3, 3, "s.rp_ai_rte");
	assert_non_null(strstr(err.msg, "unknown key 'rp_ai_rte'"));
	assert_non_null(strstr(err.msg, "did you mean 'rp_ai_rate'?"));
	assert_non_null(strstr(err.msg, "expected one of: on, offset, count, rp_ai_rate, ratio, "
					"name, timeout, buf, link, mode"));

	/* No suggestion when nothing is close. */
	assert_int_equal(bind_text("zzzzzzzz: 1\n", NULL, ICE_CFG_STRICT, &s, &err), -EINVAL);
	assert_null(strstr(err.msg, "did you mean"));
	assert_string_equal(err.key, "zzzzzzzz");

	/* The section itself must be a mapping. */
	assert_int_equal(bind_text("s: [1, 2]\n", "s", 0, &s, &err), -EINVAL);
	assert_err_at(&err, 1, 4, "s");
	assert_string_equal(err.msg, "expected a mapping, got a sequence");
}

static void test_syntax_error(void **state)
{
	struct ice_cfg_err err;
	char buf[1024];

	(void)state;
	errno = 0;
	assert_null(load("a: 1\nb: 2\nc: [1, 2\nd: 4\n", &err));
	assert_int_equal(errno, EINVAL);
	assert_string_equal(err.file, "t.yaml");
	assert_true(err.line >= 3);
	assert_non_null(strstr(err.msg, "YAML syntax error"));

	assert_null(load("a: 1\n  b: 2\n", &err));
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 4);
	assert_string_equal(ice_cfg_err_str(&err, buf, sizeof(buf)),
			    "t.yaml:2:4: YAML syntax error: mapping values are not allowed "
			    "in this context");

	assert_null(load("a: *nope\n", &err));
	assert_int_equal(err.line, 1);
	assert_non_null(strstr(err.msg, "undefined alias"));

	/* Invalid UTF-8 is a reader error: no line, but an offset. */
	assert_null(load("a: \xff\n", &err));
	assert_int_equal(err.line, 0);
	assert_non_null(strstr(err.msg, "offset 3"));

	assert_null(load("a: 1\n---\nb: 2\n", &err));
	assert_int_equal(err.line, 2);
	assert_non_null(strstr(err.msg, "single document"));
}

static void test_duplicate_key(void **state)
{
	struct ice_cfg_err err;

	(void)state;
	errno = 0;
	assert_null(load("top:\n  a: 1\n  b: 2\n  a: 3\n", &err));
	assert_int_equal(errno, EINVAL);
	assert_err_at(&err, 4, 3, "top.a");
	assert_string_equal(err.msg, "duplicate key (first defined at line 2, column 3)");

	/* The first duplicate in file order is the one reported. */
	assert_null(load("z: 1\ny: 1\ny: 2\nz: 2\n", &err));
	assert_err_at(&err, 3, 1, "y");

	/* Inside a sequence item. */
	assert_null(load("l:\n  - {k: 1, k: 2}\n", &err));
	assert_err_at(&err, 2, 12, "l[0].k");

	/* Non-scalar keys are refused. */
	assert_null(load("? [a, b]\n: 1\n", &err));
	assert_non_null(strstr(err.msg, "mapping keys must be scalars"));
}

static void test_alias(void **state)
{
	static const char text[] = "base: &b\n"
				   "  rp_ai_rate: 77\n"
				   "  mode: reactive\n"
				   "name: &n hello\n"
				   "copy: *b\n"
				   "list: [*n, *n, *b]\n";
	struct ice_cfg_err err;
	struct ice_yaml_doc *doc = load(text, &err);
	const struct ice_yaml_node *root, *copy, *list;
	struct sample s = {0};

	(void)state;
	assert_non_null(doc);
	root = ice_yaml_root(doc);
	copy = ice_yaml_get(root, "copy");
	assert_int_equal(ice_yaml_kind(copy), ICE_YAML_MAP);
	assert_string_equal(ice_yaml_scalar(ice_yaml_get(copy, "rp_ai_rate")), "77");
	/* An alias points at the anchored node and keeps its position. */
	assert_int_equal(ice_yaml_line(ice_yaml_get(copy, "mode")), 3);
	list = ice_yaml_get(root, "list");
	assert_int_equal(ice_yaml_len(list), 3);
	assert_string_equal(ice_yaml_scalar(ice_yaml_at(list, 0)), "hello");
	assert_string_equal(ice_yaml_scalar(ice_yaml_at(list, 1)), "hello");
	assert_ptr_equal(ice_yaml_at(list, 2), copy);
	assert_int_equal(
		ice_cfg_bind(doc, copy, "copy", sample_fields, NFIELDS, &s, ICE_CFG_STRICT, &err),
		0);
	assert_int_equal(s.rate_mbit, 77);
	assert_int_equal(s.mode, 1);
	ice_yaml_free(doc);

	/* Exponential aliasing stays linear in memory. */
	doc = load("a: &a [x, x, x, x, x, x, x, x]\n"
		   "b: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
		   "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
		   "d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
		   "e: &e [*d, *d, *d, *d, *d, *d, *d, *d]\n"
		   "f: [*e, *e, *e, *e, *e, *e, *e, *e]\n",
		   &err);
	assert_non_null(doc);
	ice_yaml_free(doc);
}

static void test_deep_nesting(void **state)
{
	char text[4096];
	struct ice_cfg_err err;
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 1000; i++)
		text[n++] = '[';
	for (int i = 0; i < 1000; i++)
		text[n++] = ']';
	text[n] = '\0';
	errno = 0;
	assert_null(load(text, &err));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.msg, "nesting deeper than"));
}

static void test_set_kv(void **state)
{
	struct sample s = {0};
	struct ice_cfg_err err;
	char buf[1024];

	(void)state;
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "rp_ai_rate=10", &err), 0);
	assert_int_equal(s.rate_mbit, 10);
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "name=", &err), 0);
	assert_string_equal(s.name, "");
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "name=a=b", &err), 0);
	assert_string_equal(s.name, "a=b");
	assert_int_equal(ice_cfg_set(sample_fields, NFIELDS, &s, "timeout", "2ms", &err), 0);
	assert_int_equal(s.timeout_ns, 2 * ICE_NSEC_PER_MSEC);

	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "rp_ai_rate=fast", &err),
			 -EINVAL);
	assert_string_equal(ice_cfg_err_str(&err, buf, sizeof(buf)),
			    "key 'rp_ai_rate': expected an integer in [1, 400000], got 'fast'");
	assert_int_equal(err.line, 0);
	assert_int_equal(s.rate_mbit, 10);

	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "rp_ai_rate=500000", &err),
			 -ERANGE);
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "count=-3", &err), -ERANGE);
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "name=toolongname", &err),
			 -ERANGE);
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "bogus=1", &err), -ENOENT);
	assert_string_equal(err.key, "bogus");
	assert_non_null(strstr(err.msg, "unknown key 'bogus'"));
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "rp_ai_rate", &err), -EINVAL);
	assert_string_equal(err.msg, "expected key=value, got 'rp_ai_rate'");
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "=5", &err), -EINVAL);
	/* err may be NULL. */
	assert_int_equal(ice_cfg_set_kv(sample_fields, NFIELDS, &s, "on=2", NULL), -EINVAL);
}

static void test_errf_and_str(void **state)
{
	struct ice_cfg_err err;
	struct ice_yaml_doc *doc = load("a:\n  b: 1\n", &err);
	const struct ice_yaml_node *b;
	char buf[1024], small[12];

	(void)state;
	assert_non_null(doc);
	b = ice_yaml_get(ice_yaml_get(ice_yaml_root(doc), "a"), "b");
	ice_cfg_errf(&err, doc, b, "a.b", "must be even, got %d", 1);
	assert_string_equal(ice_cfg_err_str(&err, buf, sizeof(buf)),
			    "t.yaml:2:6: key 'a.b': must be even, got 1");
	ice_cfg_errf(&err, doc, NULL, NULL, "missing section '%s'", "a");
	assert_string_equal(ice_cfg_err_str(&err, buf, sizeof(buf)), "t.yaml: missing section 'a'");
	ice_cfg_errf(&err, NULL, NULL, "k", "bad");
	assert_string_equal(ice_cfg_err_str(&err, buf, sizeof(buf)), "key 'k': bad");
	/* Truncates safely. */
	ice_cfg_errf(&err, doc, b, "a.b", "must be even");
	assert_string_equal(ice_cfg_err_str(&err, small, sizeof(small)), "t.yaml:2:6:");
	ice_yaml_free(doc);
}

struct cli_obj {
	bool on;
	uint32_t n;
};

static int cli_finish(void *obj, const char *path, struct ice_cfg_err *err)
{
	(void)obj;
	(void)path;
	(void)err;
	return 0;
}

/* Boolean keys on the command line: "--KEY" alone is true, "--KEY false"
 * takes the word that follows; other keys take their value. */
static void test_parse_args_bool(void **state)
{
	static const struct ice_cfg_field f[] = {
		{.key = "on", .type = ICE_CFG_BOOL, .offset = offsetof(struct cli_obj, on)},
		{.key = "n",
		 .type = ICE_CFG_U32,
		 .offset = offsetof(struct cli_obj, n),
		 .min = 0,
		 .max = 100},
	};
	struct cli_obj o = {.on = true};
	struct ice_cfg_cli cli = {.tool = "t",
				  .synopsis = "usage: t",
				  .fields = f,
				  .nfields = 2,
				  .obj = &o,
				  .finish = cli_finish};
	char *a1[] = {"t", "--on", "false", "--n", "7", NULL};
	char *a2[] = {"t", "--n", "3", "--on", NULL};
	char *a3[] = {"t", "--on", "maybe", NULL};

	(void)state;
	assert_int_equal(ice_cfg_parse_args(&cli, 5, a1), 0);
	assert_false(o.on);
	assert_int_equal(o.n, 7);
	assert_int_equal(ice_cfg_parse_args(&cli, 4, a2), 0);
	assert_true(o.on);
	assert_int_equal(o.n, 3);
	/* a non-boolean word after a boolean key is a stray argument */
	assert_int_equal(ice_cfg_parse_args(&cli, 3, a3), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_string_navigate),
		cmocka_unit_test(test_null_safe),
		cmocka_unit_test(test_empty_document),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_bind_all_types),
		cmocka_unit_test(test_absent_keys_unchanged),
		cmocka_unit_test(test_range_error_position),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_strict_unknown_key),
		cmocka_unit_test(test_syntax_error),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_alias),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_set_kv),
		cmocka_unit_test(test_errf_and_str),
		cmocka_unit_test(test_parse_args_bool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
