// SPDX-License-Identifier: Apache-2.0
/*
 * The agent's side of plans (host_agent/agent_plan.c), without Redis: a good
 * plan is written into the control block by QPN; a bad signature, a key the
 * agent does not hold, a key id forged to a trusted key's, an old epoch, an
 * expired plan, an out-of-range value or another host's plan is refused and
 * the previous plan stays in the slots; a QP that connects later gets its
 * entry; at the end of the lifetime every slot the plan set is back to the
 * QP's defaults (flags 0). Key rotation: the public key file re-read when it
 * changes (old + new accepted, then only the new); key files with loose
 * modes, the wrong type or no key stop the agent.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "agent.h"
#include "agent_plan.h"
#include "ice_plan.h"
#include "ice_ctrl.h"

#define NOW 1700000000000ull

static char dir[] = "/tmp/ice-ctld-plan-XXXXXX";
static char addr[32];
static struct agent_cfg cfg;
static struct ice_plan_key key, other_key, new_key; /* private: the controller's */
static struct ice_ctrl *ctrl;

static void seed_key(struct ice_plan_key *k, uint8_t fill)
{
	uint8_t seed[32];

	memset(seed, fill, sizeof(seed));
	assert_int_equal(ice_plan_key_from_seed(seed, k), 0);
}

/* text into dir/name (a new file renamed over the old one, as an operator's
 * editor or cp would leave it), mode; returns the path */
static const char *put_file(const char *name, const char *text, mode_t mode)
{
	static char path[300];
	char tmp[310];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(tmp, mode), 0);
	assert_int_equal(rename(tmp, path), 0);
	return path;
}

/* the public keys of k1 (and k2) as one PEM file */
static const char *pub_file(const char *name, const struct ice_plan_key *k1,
			    const struct ice_plan_key *k2)
{
	char *a = ice_plan_key_pem(k1, false), *b = k2 ? ice_plan_key_pem(k2, false) : strdup("");
	char text[4096];
	const char *path;

	assert_non_null(a);
	assert_non_null(b);
	snprintf(text, sizeof(text), "%s%s", a, b);
	path = put_file(name, text, 0644);
	free(a);
	free(b);
	return path;
}

static int setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	agent_cfg_defaults(&cfg);
	snprintf(cfg.host, sizeof(cfg.host), "h1");
	snprintf(cfg.epoch_file, sizeof(cfg.epoch_file), "%s/h1.epoch", dir);
	seed_key(&key, 1);
	seed_key(&other_key, 2);
	seed_key(&new_key, 3);
	snprintf(cfg.plan_pubkeys, sizeof(cfg.plan_pubkeys), "%s",
		 pub_file("plan.pub", &key, NULL));
	snprintf(addr, sizeof(addr), "127.99.%d.%d", (int)(getpid() / 250 % 250),
		 (int)(getpid() % 250 + 1));
	ctrl = ice_ctrl_create(addr, NULL);
	if (ctrl == NULL) {
		fprintf(stderr, "skipped: cannot create a control block: %s\n", strerror(errno));
		exit(77);
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	ice_ctrl_close(ctrl);
	ice_ctrl_unlink(addr);
	ice_plan_key_fini(&key);
	ice_plan_key_fini(&other_key);
	ice_plan_key_fini(&new_key);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *plan(const char *host, uint64_t epoch, uint64_t issued, uint16_t sport, uint32_t rate,
		  const struct ice_plan_key *k)
{
	struct ice_plan_entry e[2] = {
		{.qpn = 0x100,
		 .sport = sport,
		 .start_mbps = rate,
		 .target_mbps = rate,
		 .path = 1,
		 .has_dcqcn = true},
		{.qpn = 0x200, .sport = sport + 1, .path = 0}}; /* a path only: its own DCQCN */
	struct ice_host_plan hp = {
		.epoch = epoch, .lifetime_ms = 1000, .issued_ms = issued, .entries = e, .n = 2};
	char *s;

	snprintf(hp.host, sizeof(hp.host), "%s", host);
	ice_dcqcn_params_default(&e[0].dcqcn);
	ice_dcqcn_params_default(&e[1].dcqcn);
	s = ice_plan_sign(&hp, k);
	assert_non_null(s);
	return s;
}

static void slot_is(int slot, uint32_t flags, uint16_t sport, uint32_t rate, uint64_t epoch)
{
	struct ice_ctrl_qp q;

	assert_true(ice_ctrl_get(ctrl, slot, &q));
	assert_int_equal(q.flags, flags);
	assert_int_equal(q.sport, sport);
	assert_int_equal(q.rate_mbps, rate);
	assert_int_equal(q.epoch, epoch);
}

static void refused(struct agent_plan *p, char *json, int want, const char *what)
{
	struct ice_cfg_err err;
	uint64_t n = agent_plan_refused(p);

	assert_int_equal(agent_plan_offer(p, json, NOW + 10, &err), want);
	if (what != NULL && strstr(err.key, what) == NULL)
		fail_msg("reason names '%s', not '%s' (%s)", err.key, what, err.msg);
	assert_int_equal(agent_plan_refused(p), n + 1);
	free(json);
}

static void test_apply_refuse_expire(void **state)
{
	struct ice_cfg_err err;
	struct agent_plan *p = agent_plan_new(&cfg, ctrl, &err);
	const uint32_t all = ICE_CTRL_SET_SPORT | ICE_CTRL_SET_DCQCN;
	int s1 = ice_ctrl_claim(ctrl, 0x100), s2;
	char *good, *bad;
	size_t at;

	assert_non_null(p);
	assert_true(s1 >= 0);
	good = plan("h1", 5, NOW, 50000, 40, &key);
	assert_int_equal(agent_plan_offer(p, good, NOW + 10, &err), 0);
	assert_int_equal(agent_plan_offer(p, good, NOW + 10, &err), 1); /* the same text */
	free(good);
	assert_int_equal(agent_plan_epoch(p), 5);
	slot_is(s1, all | ICE_CTRL_SET_RATE, 50000, 40, 5);

	/* refusals: the previous plan stays */
	/* a key this agent does not hold: its own reason */
	refused(p, plan("h1", 6, NOW, 51000, 40, &other_key), -ENOKEY, "kid");
	assert_non_null(strstr(agent_plan_reason(p), "unknown key id"));
	/* another key's signature under the trusted key's id: a bad signature */
	bad = plan("h1", 6, NOW, 51000, 40, &other_key);
	memcpy(strstr(bad, other_key.kid), key.kid, ICE_PLAN_KID_HEX);
	refused(p, bad, -EPERM, "sig");
	assert_non_null(strstr(agent_plan_reason(p), "bad signature"));
	refused(p, plan("h1", 5, NOW, 51000, 40, &key), -ESTALE, "epoch"); /* not newer */
	refused(p, plan("h1", 4, NOW, 51000, 40, &key), -ESTALE, "epoch"); /* older */
	refused(p, plan("h1", 7, NOW - 5000, 51000, 40, &key), -ETIME, "lifetime");
	/* dated further ahead than the clock-skew allowance */
	refused(p, plan("h1", 7, NOW + 10 + ICE_PLAN_SKEW_MS + 1, 51000, 40, &key), -ETIME,
		"issued_ms");
	refused(p, plan("h2", 8, NOW, 51000, 40, &key), -EXDEV, "host"); /* another host's */
	bad = plan("h1", 9, NOW, 51000, 40, &key);
	/* tamper: a source port outside 49152-65535, re-signed, must be refused on range */
	{
		struct ice_plan_entry e = {.qpn = 0x100, .sport = 1000, .path = 0};
		struct ice_host_plan hp = {
			.epoch = 9, .lifetime_ms = 1000, .issued_ms = NOW, .entries = &e, .n = 1};

		snprintf(hp.host, sizeof(hp.host), "h1");
		ice_dcqcn_params_default(&e.dcqcn);
		free(bad);
		bad = ice_plan_sign(&hp, &key);
		assert_non_null(bad);
	}
	refused(p, bad, -ERANGE, "sport");
	/* a forged value under a good signature */
	bad = plan("h1", 10, NOW, 52000, 40, &key);
	at = (size_t)(strstr(bad, "\"sport\":52000") - bad);
	memcpy(bad + at, "\"sport\":52001", 13);
	refused(p, bad, -EPERM, NULL);
	refused(p, strdup("{\"plan\":"), -EBADMSG, NULL);
	assert_int_equal(agent_plan_epoch(p), 5);
	slot_is(s1, all | ICE_CTRL_SET_RATE, 50000, 40, 5);

	/* a QP that connects later gets its entry */
	s2 = ice_ctrl_claim(ctrl, 0x200);
	assert_true(s2 >= 0);
	agent_plan_reconcile(p);
	slot_is(s2, ICE_CTRL_SET_SPORT, 50001, 0, 5); /* no DCQCN in its entry */

	/* a newer plan that leaves 0x200 out: its slot goes back to defaults */
	{
		struct ice_plan_entry e = {
			.qpn = 0x100, .sport = 60000, .path = 1, .has_dcqcn = true};
		struct ice_host_plan hp = {
			.epoch = 11, .lifetime_ms = 1000, .issued_ms = NOW, .entries = &e, .n = 1};

		snprintf(hp.host, sizeof(hp.host), "h1");
		ice_dcqcn_params_default(&e.dcqcn);
		good = ice_plan_sign(&hp, &key);
		assert_int_equal(agent_plan_offer(p, good, NOW + 20, &err), 0);
		free(good);
	}
	slot_is(s1, all, 60000, 0, 11);
	slot_is(s2, 0, 0, 0, 0);

	/* the lifetime ends: every slot back to the defaults */
	assert_false(agent_plan_expire(p, NOW + 999));
	assert_true(agent_plan_expire(p, NOW + 1000));
	assert_int_equal(agent_plan_epoch(p), 0);
	slot_is(s1, 0, 0, 0, 0);
	/* and an old plan is still refused afterwards */
	refused(p, plan("h1", 11, NOW + 1000, 50000, 0, &key), -ESTALE, "epoch");
	ice_ctrl_release(ctrl, s1);
	ice_ctrl_release(ctrl, s2);
	agent_plan_free(p);
}

static int dcqcn_calls;
static struct agent_dcqcn_prios dcqcn_last;
static bool dcqcn_null;

static int on_dcqcn(void *ctx, const struct agent_dcqcn_prios *set, struct ice_cfg_err *err)
{
	(void)ctx;
	(void)err;
	dcqcn_calls++;
	dcqcn_null = set == NULL;
	if (set != NULL)
		dcqcn_last = *set;
	return 0;
}

static char *read_text(const char *path)
{
	static char buf[1024];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* The verbs hook's plan file (ports per peer, the policy's tclass) and the
 * NIC backend's DCQCN profile follow the plan; both go when it expires. */
static void test_hook_file_and_dcqcn(void **state)
{
	struct ice_plan_entry e[3] = {
		{.qpn = 0x300, .sport = 50010, .path = 0, .has_dcqcn = true},
		/* priority 5 through traffic class 40 (DSCP 10), another profile */
		{.qpn = 0x301,
		 .sport = 50011,
		 .path = 1,
		 .has_dcqcn = true,
		 .has_tclass = true,
		 .tclass = 40,
		 .has_prio = true,
		 .prio = 5},
		{.qpn = 0x302, .sport = 50012, .path = 1, .has_dcqcn = true}, /* not connected */
	};
	struct ice_host_plan hp = {
		.epoch = 100, .lifetime_ms = 1000, .issued_ms = NOW, .entries = e, .n = 3};
	struct agent_cfg c = cfg;
	struct ice_cfg_err err;
	struct agent_plan *p;
	char path[300], *json, *txt;
	int s1, s2;

	snprintf(c.run_dir, sizeof(c.run_dir), "%s", dir);
	snprintf(c.addr, sizeof(c.addr), "%.15s", addr);
	snprintf(c.tclass, sizeof(c.tclass), "106");
	snprintf(c.epoch_file, sizeof(c.epoch_file), "none");
	c.dcqcn_prio = 3;
	p = agent_plan_new(&c, ctrl, &err);
	assert_non_null(p);
	agent_plan_on_dcqcn(p, on_dcqcn, NULL);
	s1 = ice_ctrl_claim(ctrl, 0x300);
	s2 = ice_ctrl_claim(ctrl, 0x301);
	assert_true(s1 >= 0 && s2 >= 0);
	ctrl->qp[s1].remote_ip = ctrl->qp[s2].remote_ip = 0x0200000a; /* 10.0.0.2 */
	snprintf(hp.host, sizeof(hp.host), "h1");
	for (int i = 0; i < 3; i++)
		ice_dcqcn_params_default(&e[i].dcqcn);
	e[0].dcqcn.rp_max_rate = e[1].dcqcn.rp_max_rate = 25000;
	e[2].dcqcn.rp_max_rate = 30000; /* capped per QP: the NIC takes the highest */
	e[1].dcqcn.rp_ai_rate = 1;
	json = ice_plan_sign(&hp, &key);
	assert_int_equal(agent_plan_offer(p, json, NOW + 10, &err), 0);
	free(json);
	snprintf(path, sizeof(path), "%s/ccl-plan-%s.conf", dir, addr);
	txt = read_text(path);
	assert_non_null(txt);
	/* the plan's traffic class on its QP's port; the agent's as the default */
	assert_non_null(strstr(txt, "\nversion 1\ntclass 106\nsport 10.0.0.2 50010 50011/40\n"));
	assert_int_equal(dcqcn_calls, 1);
	assert_false(dcqcn_null);
	/* entries without a priority: the agent's dcqcn_prio (3) */
	assert_true(dcqcn_last.has[3] && dcqcn_last.has[5]);
	assert_false(dcqcn_last.has[0] || dcqcn_last.has[4]);
	assert_int_equal(dcqcn_last.prio[3].rp_max_rate, 30000);
	assert_int_equal(dcqcn_last.prio[5].rp_max_rate, 25000);
	assert_int_equal(dcqcn_last.prio[5].rp_ai_rate, 1);
	assert_int_not_equal(dcqcn_last.prio[3].rp_ai_rate, 1);
	/* device-wide: priority 3's, 2 of 3 QPs */
	assert_true(dcqcn_last.has_wide);
	assert_int_equal(dcqcn_last.wide_prio, 3);
	assert_memory_equal(&dcqcn_last.wide, &dcqcn_last.prio[3], sizeof(dcqcn_last.wide));
	assert_true(agent_plan_expire(p, NOW + 1000));
	assert_null(read_text(path));
	assert_int_equal(dcqcn_calls, 2);
	assert_true(dcqcn_null);
	ice_ctrl_release(ctrl, s1);
	ice_ctrl_release(ctrl, s2);
	agent_plan_free(p);
}

/* Rotation without a restart: the agent trusts old and new while the
 * controllers move to the new key, then only the new one. The file is read
 * again when it changes; a change that does not load keeps the keys. */
static void test_rotation(void **state)
{
	struct agent_cfg c = cfg;
	struct ice_cfg_err err;
	struct agent_plan *p;
	char *js;

	(void)state;
	snprintf(c.epoch_file, sizeof(c.epoch_file), "none");
	snprintf(c.plan_pubkeys, sizeof(c.plan_pubkeys), "%s", pub_file("rot.pub", &key, NULL));
	p = agent_plan_new(&c, ctrl, &err);
	assert_non_null(p);
	assert_int_equal(agent_plan_offer(p, js = plan("h1", 1, NOW, 50000, 0, &key), NOW, &err),
			 0);
	free(js);
	refused(p, plan("h1", 2, NOW, 50000, 0, &new_key), -ENOKEY, "kid");
	/* step 1: the new key trusted beside the old one */
	pub_file("rot.pub", &key, &new_key);
	assert_int_equal(
		agent_plan_offer(p, js = plan("h1", 3, NOW, 50000, 0, &new_key), NOW, &err), 0);
	free(js);
	/* both controllers of an HA pair may sign meanwhile: one epoch sequence */
	assert_int_equal(agent_plan_offer(p, js = plan("h1", 4, NOW, 50000, 0, &key), NOW, &err),
			 0);
	free(js);
	refused(p, plan("h1", 4, NOW, 50001, 0, &new_key), -ESTALE, "epoch");
	/* a broken edit: logged, the two keys stay */
	put_file("rot.pub", "-----BEGIN PUBLIC KEY-----\ngarbage\n", 0644);
	assert_int_equal(
		agent_plan_offer(p, js = plan("h1", 5, NOW, 50000, 0, &new_key), NOW, &err), 0);
	free(js);
	/* step 2: the old key dropped */
	pub_file("rot.pub", &new_key, NULL);
	refused(p, plan("h1", 6, NOW, 50000, 0, &key), -ENOKEY, "kid");
	assert_int_equal(
		agent_plan_offer(p, js = plan("h1", 7, NOW, 50000, 0, &new_key), NOW, &err), 0);
	free(js);
	assert_int_equal(agent_plan_epoch(p), 7);
	agent_plan_expire(p, NOW + 1000);
	agent_plan_free(p);
}

static const char *rsa_pub_file(void)
{
	EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	BIO *b = BIO_new(BIO_s_mem());
	char text[4096], *data;
	long n;

	assert_non_null(rsa);
	assert_int_equal(PEM_write_bio_PUBKEY(b, rsa), 1);
	n = BIO_get_mem_data(b, &data);
	assert_true(n > 0 && n < (long)sizeof(text));
	memcpy(text, data, (size_t)n);
	text[n] = '\0';
	BIO_free(b);
	EVP_PKEY_free(rsa);
	return put_file("rsa.pub", text, 0644);
}

/* Each bad public key file stops the agent with one error naming the file
 * and what was expected. */
static void test_key_refused(void **state)
{
	struct agent_cfg c = cfg;
	struct ice_cfg_err err;
	char *priv, buf[768];
	struct {
		const char *path;
		int err;
		const char *says;
	} bad[8];
	int n = 0;

	(void)state;
	bad[n].path = strdup(put_file("loose.pub", "x", 0664));
	bad[n].err = EPERM;
	bad[n++].says = "writable by group or others (mode 0664)";
	bad[n].path = strdup(put_file("empty.pub", "", 0644));
	bad[n].err = EINVAL;
	bad[n++].says = "empty";
	bad[n].path = strdup(put_file("junk.pub", "not a key\n", 0644));
	bad[n].err = EINVAL;
	bad[n++].says = "no PEM block";
	bad[n].path = strdup(rsa_pub_file());
	bad[n].err = EINVAL;
	bad[n++].says = ":1: an RSA key; expected an Ed25519 key";
	priv = ice_plan_key_pem(&key, true);
	bad[n].path = strdup(put_file("priv.pub", priv, 0644));
	free(priv);
	bad[n].err = EINVAL;
	bad[n++].says = "a private key; an agent holds public keys only";
	{
		char *a = ice_plan_key_pem(&key, false), text[4096];

		snprintf(text, sizeof(text), "%s%s", a, a);
		bad[n].path = strdup(put_file("twice.pub", text, 0644));
		free(a);
	}
	bad[n].err = EINVAL;
	bad[n++].says = ":4: the same key again";
	bad[n].path = strdup(put_file("none.pub", "", 0644));
	unlink(bad[n].path);
	bad[n].err = ENOENT;
	bad[n++].says = "cannot open";
	for (int i = 0; i < n; i++) {
		snprintf(c.plan_pubkeys, sizeof(c.plan_pubkeys), "%s", bad[i].path);
		errno = 0;
		assert_null(agent_plan_new(&c, ctrl, &err));
		assert_int_equal(errno, bad[i].err);
		ice_cfg_err_str(&err, buf, sizeof(buf));
		if (strstr(buf, bad[i].says) == NULL || strstr(buf, bad[i].path) == NULL)
			fail_msg("%s: '%s' does not say '%s'", bad[i].path, buf, bad[i].says);
		free((char *)bad[i].path);
	}
}

/* The epoch floor outlives the agent: a restarted agent refuses a replay of
 * the plan it had applied (or an older one), takes a newer one; a floor
 * file that is garbage or that others could write stops it from starting. */
static void test_epoch_survives_restart(void **state)
{
	struct agent_cfg c = cfg;
	struct ice_cfg_err err;
	struct agent_plan *p;
	char *js, path[300];
	FILE *f;

	(void)state;
	snprintf(c.epoch_file, sizeof(c.epoch_file), "%s/restart.epoch", dir);
	p = agent_plan_new(&c, ctrl, &err);
	assert_non_null(p);
	assert_int_equal(agent_plan_last_epoch(p), 0);
	js = plan("h1", 40, NOW, 50000, 0, &key);
	assert_int_equal(agent_plan_offer(p, js, NOW + 10, &err), 0);
	agent_plan_free(p);

	p = agent_plan_new(&c, ctrl, &err); /* the restart */
	assert_non_null(p);
	assert_int_equal(agent_plan_last_epoch(p), 40);
	assert_int_equal(agent_plan_offer(p, js, NOW + 10, &err), -ESTALE); /* the replay */
	free(js);
	js = plan("h1", 41, NOW, 50000, 0, &key);
	assert_int_equal(agent_plan_offer(p, js, NOW + 10, &err), 0);
	free(js);
	agent_plan_free(p);
	f = fopen(c.epoch_file, "r");
	assert_non_null(f);
	assert_non_null(fgets(path, sizeof(path), f));
	fclose(f);
	assert_string_equal(path, "41\n");

	/* garbage, then a file others may write: refused at start */
	f = fopen(c.epoch_file, "w");
	fputs("forty-two\n", f);
	fclose(f);
	assert_null(agent_plan_new(&c, ctrl, &err));
	assert_string_equal(err.key, "epoch_file");
	f = fopen(c.epoch_file, "w");
	fputs("42\n", f);
	fclose(f);
	chmod(c.epoch_file, 0666);
	assert_null(agent_plan_new(&c, ctrl, &err));
	assert_int_equal(errno, EPERM);
	/* "none": memory only */
	snprintf(c.epoch_file, sizeof(c.epoch_file), "none");
	p = agent_plan_new(&c, ctrl, &err);
	assert_non_null(p);
	assert_int_equal(agent_plan_last_epoch(p), 0);
	agent_plan_free(p);
}

/* Slots of a transport killed before it released them are freed; live and
 * re-claimed slots are not. */
static void test_reap_dead_owner(void **state)
{
	int live = ice_ctrl_claim(ctrl, 0x300), dead = ice_ctrl_claim(ctrl, 0x400);
	pid_t child = fork();

	(void)state;
	assert_true(live >= 0 && dead >= 0 && child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	ctrl->qp[dead].owner_pid = (uint32_t)child;
	assert_false(ice_ctrl_reap(ctrl, live, 0x300)); /* owner alive */
	assert_false(ice_ctrl_reap(ctrl, dead, 0x401)); /* another QP now */
	assert_true(ice_ctrl_reap(ctrl, dead, 0x400));
	assert_int_equal(ctrl->qp[dead].qpn, 0);
	assert_false(ice_ctrl_reap(ctrl, dead, 0x400)); /* already free */
	ice_ctrl_release(ctrl, live);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_refuse_expire),
		cmocka_unit_test(test_key_refused),
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_hook_file_and_dcqcn),
		cmocka_unit_test(test_epoch_survives_restart),
		cmocka_unit_test(test_reap_dead_owner),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
