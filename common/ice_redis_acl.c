// SPDX-License-Identifier: Apache-2.0
/*
 * ice_redis_acl.c: Redis users: the auth file and AUTH at connect
 * (ICE_REDIS_AUTH), and the ACL file rendered from the key table's roles
 * (ice_redis.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ice_ipc.h"
#include "ice_redis_internal.h"

/* ---- credentials ------------------------------------------------------------ */

#define AUTH_FILE_MAX 4096

void ice_redis_auth_wipe(struct ice_redis_auth *a)
{
	explicit_bzero(a, sizeof(*a));
}

/* one line's words into a: 0, or -EINVAL with why (the words never printed) */
static int auth_words(char *line, const char *path, unsigned lno, struct ice_redis_auth *a,
		      char *why, size_t len)
{
	char *w[3], *save = NULL;
	unsigned n = 0;

	for (char *t = strtok_r(line, " \t\r", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r", &save))
		if (n++ < 3)
			w[n - 1] = t;
	if (n == 0 || n > 2) {
		snprintf(why, len, "%s %s:%u: expected USER PASSWORD or PASSWORD, got %u words",
			 ICE_REDIS_AUTH_ENV, path, lno, n);
		return -EINVAL;
	}
	if (n == 2 && strlen(w[0]) >= sizeof(a->user)) {
		snprintf(why, len, "%s %s:%u: user name longer than %zu bytes", ICE_REDIS_AUTH_ENV,
			 path, lno, sizeof(a->user) - 1);
		return -EINVAL;
	}
	if (strlen(w[n - 1]) >= sizeof(a->pass)) {
		snprintf(why, len, "%s %s:%u: password longer than %zu bytes", ICE_REDIS_AUTH_ENV,
			 path, lno, sizeof(a->pass) - 1);
		return -EINVAL;
	}
	if (n == 2)
		snprintf(a->user, sizeof(a->user), "%s", w[0]);
	snprintf(a->pass, sizeof(a->pass), "%s", w[n - 1]);
	return 0;
}

int ice_redis_auth_load(const char *path, struct ice_redis_auth *a, char *why, size_t len)
{
	char buf[AUTH_FILE_MAX + 1], msg[512], *line, *next;
	unsigned lno = 0;
	bool found = false;
	ssize_t n;
	int fd, ret = 0;

	memset(a, 0, sizeof(*a));
	fd = ice_ipc_secret_open(path, msg, sizeof(msg));
	if (fd < 0) {
		snprintf(why, len, "%s %s", ICE_REDIS_AUTH_ENV, msg);
		return fd;
	}
	n = read(fd, buf, sizeof(buf));
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret < 0) {
		snprintf(why, len, "%s %s: cannot read: %s", ICE_REDIS_AUTH_ENV, path,
			 strerror(-ret));
		return ret;
	}
	if (n > AUTH_FILE_MAX) {
		snprintf(why, len, "%s %s: longer than %d bytes", ICE_REDIS_AUTH_ENV, path,
			 AUTH_FILE_MAX);
		ret = -EINVAL;
		goto out;
	}
	buf[n] = '\0';
	if (memchr(buf, '\0', (size_t)n) != NULL) {
		snprintf(why, len, "%s %s: holds a NUL byte; expected text", ICE_REDIS_AUTH_ENV,
			 path);
		ret = -EINVAL;
		goto out;
	}
	for (line = buf; line != NULL; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lno++;
		line += strspn(line, " \t\r");
		if (*line == '\0' || *line == '#')
			continue;
		if (found) {
			snprintf(why, len,
				 "%s %s:%u: a second credentials line; expected one line "
				 "(USER PASSWORD or PASSWORD)",
				 ICE_REDIS_AUTH_ENV, path, lno);
			ret = -EINVAL;
			goto out;
		}
		ret = auth_words(line, path, lno, a, why, len);
		if (ret < 0)
			goto out;
		found = true;
	}
	if (!found) {
		snprintf(why, len, "%s %s: no credentials (only comments or blank lines)",
			 ICE_REDIS_AUTH_ENV, path);
		ret = -EINVAL;
	}
out:
	explicit_bzero(buf, sizeof(buf));
	if (ret < 0)
		ice_redis_auth_wipe(a);
	return ret;
}

/* AUTH with ICE_REDIS_AUTH's file, when set: 0, or -EACCES with why */
int ice_redis_auth_send(redisContext *c, char *why, size_t whylen)
{
	const char *path = getenv(ICE_REDIS_AUTH_ENV);
	struct ice_redis_auth a;
	redisReply *rep;
	int ret = 0;

	if (path == NULL || path[0] == '\0')
		return 0;
	if (ice_redis_auth_load(path, &a, why, whylen) < 0)
		return -EACCES;
	if (a.user[0] != '\0')
		rep = redisCommand(c, "AUTH %s %s", a.user, a.pass);
	else
		rep = redisCommand(c, "AUTH %s", a.pass);
	if (rep == NULL) {
		snprintf(why, whylen, "AUTH as %s: %s", a.user[0] ? a.user : "default",
			 c->errstr[0] ? c->errstr : "no reply");
		ret = -EIO;
	} else if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(why, whylen, "AUTH as %s refused: %s (%s %s)",
			 a.user[0] ? a.user : "default", rep->str, ICE_REDIS_AUTH_ENV, path);
		ret = -EACCES;
	}
	if (rep != NULL)
		freeReplyObject(rep);
	ice_redis_auth_wipe(&a);
	return ret;
}

/* ---- ACL file --------------------------------------------------------------- */

static const char *const role_names[ICE_ROLE_MAX] = {
	[ICE_ROLE_CONTROLLER] = "ice-controller", [ICE_ROLE_HOST] = "ice-host-",
	[ICE_ROLE_EXPORTER] = "ice-exporter",	  [ICE_ROLE_OPERATOR] = "ice-operator",
	[ICE_ROLE_READER] = "ice-reader",
};

int ice_redis_acl_user_name(char *buf, size_t len, const struct ice_redis_acl_user *u)
{
	int n;

	if ((unsigned)u->role >= ICE_ROLE_MAX)
		return -EINVAL;
	if (u->role == ICE_ROLE_HOST && (u->host == NULL || u->host[0] == '\0'))
		return -EINVAL;
	n = snprintf(buf, len, "%s%s", role_names[u->role],
		     u->role == ICE_ROLE_HOST ? u->host : "");
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

/* A name that goes into key patterns and user names as it is: no glob
 * characters (* ? [ ] \), no spaces, no braces (hash tags) */
static bool name_ok(const char *s)
{
	if (s == NULL || s[0] == '\0' || strlen(s) >= 64)
		return false;
	return s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")] ==
	       '\0';
}

/* A key pattern of the table as an ACL key glob: <F> the fabric, <H>/<S>
 * host (or * when NULL), every other part * */
static void key_glob(char *buf, size_t len, const char *pat, const char *fabric, const char *host)
{
	size_t off = 0;

	while (*pat != '\0' && off + 1 < len) {
		const char *end = *pat == '<' ? strchr(pat, '>') : NULL;
		const char *part;

		if (end == NULL) {
			buf[off++] = *pat++;
			continue;
		}
		if (strncmp(pat, "<F>", 3) == 0)
			part = fabric;
		else if ((strncmp(pat, "<H>", 3) == 0 || strncmp(pat, "<S>", 3) == 0) &&
			 host != NULL)
			part = host;
		else
			part = "*";
		off += (size_t)snprintf(buf + off, len - off, "%s", part);
		if (off >= len)
			off = len - 1;
		pat = end + 1;
	}
	buf[off] = '\0';
}

static bool has_host(const char *pat)
{
	return strstr(pat, "<H>") != NULL;
}

/* the key selectors of u: each key its role writes (~) or reads (%R~) */
static void acl_keys(FILE *f, const char *fabric, const struct ice_redis_acl_user *u)
{
	unsigned bit = 1u << u->role;
	char g[ICE_RKEY_MAX];

	switch (u->role) {
	case ICE_ROLE_CONTROLLER:
		fprintf(f, " ~ice:%s:*", fabric);
		return;
	case ICE_ROLE_OPERATOR:
	case ICE_ROLE_READER:
		fprintf(f, " %%R~ice:%s:*", fabric);
		break;
	default:
		break;
	}
	for (int k = 0; k < ICE_RK_MAX; k++) {
		const char *pat = ice_rkey_pattern((enum ice_rkey)k), *sel;

		if (ice_rkey_writers((enum ice_rkey)k) & bit)
			sel = "~";
		else if (ice_rkey_readers((enum ice_rkey)k) & bit)
			sel = "%R~";
		else
			continue;
		if (u->role != ICE_ROLE_HOST || !has_host(pat)) {
			key_glob(g, sizeof(g), pat, fabric, NULL);
			fprintf(f, " %s%s", sel, g);
			continue;
		}
		key_glob(g, sizeof(g), pat, fabric, u->host);
		fprintf(f, " %s%s", sel, g);
		for (size_t i = 0; i < u->naddrs; i++) {
			if (strcmp(u->addrs[i], u->host) == 0)
				continue;
			key_glob(g, sizeof(g), pat, fabric, u->addrs[i]);
			fprintf(f, " %s%s", sel, g);
		}
	}
}

/* pub/sub channels, then commands */
static void acl_commands(FILE *f, const char *fabric, const struct ice_redis_acl_user *u)
{
	char key[ICE_RKEY_MAX];

	fputs(" resetchannels", f);
	switch (u->role) {
	case ICE_ROLE_CONTROLLER:
		fprintf(f, " &ice:%s:*", fabric);
		break;
	case ICE_ROLE_HOST: /* the plan channel is the plan key's name */
		if (ice_rkey(key, sizeof(key), ICE_RK_PLAN, fabric, u->host, NULL) == 0)
			fprintf(f, " &%s", key);
		break;
	case ICE_ROLE_EXPORTER:
		if (ice_rkey(key, sizeof(key), ICE_RK_LINKS, fabric, NULL, NULL) == 0)
			fprintf(f, " &%s", key);
		break;
	default:
		break;
	}
	fputs(" -@all +@read +@connection", f);
	if (u->role != ICE_ROLE_READER)
		fputs(" +@write", f);
	if (u->role == ICE_ROLE_CONTROLLER)
		fputs(" +@scripting +@pubsub", f);
	else if (u->role == ICE_ROLE_HOST)
		fputs(" +subscribe +unsubscribe", f);
	else if (u->role == ICE_ROLE_EXPORTER)
		fputs(" +publish", f);
	/* nothing that administers the server; what a cluster client needs */
	fputs(" -@admin -@dangerous +cluster|slots +asking +readonly", f);
}

static int sha256_hex(const char *s, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) != 1 || n != 32)
		return -EIO;
	for (unsigned int i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int ice_redis_acl_write(FILE *f, const char *fabric, const struct ice_redis_acl_user *users,
			size_t n, char *why, size_t whylen)
{
	char name[ICE_REDIS_USER_MAX], hash[65];

	if (!name_ok(fabric)) {
		snprintf(why, whylen,
			 "fabric name '%s': expected letters, digits, '.', '_', ':' or '-'",
			 fabric != NULL ? fabric : "");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ice_redis_acl_user *u = &users[i];

		if (u->role == ICE_ROLE_HOST && !name_ok(u->host)) {
			snprintf(why, whylen,
				 "host name '%s': expected letters, digits, '.', '_', ':' or '-'",
				 u->host != NULL ? u->host : "");
			return -EINVAL;
		}
		for (size_t a = 0; u->role == ICE_ROLE_HOST && a < u->naddrs; a++)
			if (!name_ok(u->addrs[a])) {
				snprintf(why, whylen, "host %s: address '%s' is not a plain name",
					 u->host, u->addrs[a]);
				return -EINVAL;
			}
		if (u->password == NULL || strlen(u->password) < 16 ||
		    strpbrk(u->password, " \t\r\n") != NULL) {
			snprintf(why, whylen,
				 "user %u: password of at least 16 characters without spaces "
				 "expected",
				 (unsigned)i);
			return -EINVAL;
		}
		if (ice_redis_acl_user_name(name, sizeof(name), u) < 0) {
			snprintf(why, whylen, "user %u: no name for role %d", (unsigned)i,
				 (int)u->role);
			return -EINVAL;
		}
	}
	fputs("user default reset off\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct ice_redis_acl_user *u = &users[i];

		ice_redis_acl_user_name(name, sizeof(name), u);
		if (sha256_hex(u->password, hash) < 0) {
			snprintf(why, whylen, "SHA-256 failed");
			return -EIO;
		}
		fprintf(f, "user %s reset on #%s", name, hash);
		acl_keys(f, fabric, u);
		acl_commands(f, fabric, u);
		fputc('\n', f);
	}
	explicit_bzero(hash, sizeof(hash));
	return ferror(f) ? -EIO : 0;
}

/* ---- rendering a fabric's users into a directory ----------------------------- */

#define ACL_PASS_BYTES 32

static int acl_password(char *out)
{
	unsigned char b[ACL_PASS_BYTES];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	explicit_bzero(b, sizeof(b));
	return 0;
}

/* text into DIR/NAME, mode 0600, through a new file renamed over it */
static int acl_secret(const char *dir, const char *name, const char *text, size_t len, char *why,
		      size_t whylen)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fchmod(fd, 0600) < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		ret = -errno;
	if (fd >= 0 && close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && rename(tmp, path) < 0)
		ret = -errno;
	if (ret < 0) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(-ret));
		unlink(tmp);
	}
	return ret;
}

struct acl_cred {
	struct ice_redis_acl_user u;
	char name[ICE_REDIS_USER_MAX];
	char pass[2 * ACL_PASS_BYTES + 1];
};

static int acl_files(const char *dir, const char *fabric, struct acl_cred *us, size_t n, char *why,
		     size_t whylen)
{
	struct ice_redis_acl_user *list = calloc(n, sizeof(*list));
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	if (list == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		list[i] = us[i].u;
	f = open_memstream(&text, &len);
	if (f == NULL) {
		free(list);
		return -errno;
	}
	ret = ice_redis_acl_write(f, fabric, list, n, why, whylen);
	free(list);
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	if (ret == 0)
		ret = acl_secret(dir, "users.acl", text, len, why, whylen);
	for (size_t i = 0; ret == 0 && i < n; i++) {
		char file[ICE_REDIS_USER_MAX + 16], body[256];
		int m = snprintf(body, sizeof(body), "# Redis user %s of fabric %s\n%s %s\n",
				 us[i].name, fabric, us[i].name, us[i].pass);

		ice_redis_acl_auth_name(file, sizeof(file), us[i].name);
		ret = acl_secret(dir, file, body, (size_t)m, why, whylen);
		explicit_bzero(body, sizeof(body));
	}
	if (text != NULL) {
		explicit_bzero(text, len);
		free(text);
	}
	return ret;
}

void ice_redis_acl_auth_name(char *buf, size_t len, const char *user)
{
	snprintf(buf, len, "redis-%s.auth", strncmp(user, "ice-", 4) == 0 ? user + 4 : user);
}

int ice_redis_acl_render(const char *dir, const char *fabric,
			 const struct ice_redis_acl_user *hosts, size_t nhosts, char *why,
			 size_t whylen)
{
	static const enum ice_redis_role fixed[] = {ICE_ROLE_CONTROLLER, ICE_ROLE_EXPORTER,
						    ICE_ROLE_OPERATOR, ICE_ROLE_READER};
	size_t nf = sizeof(fixed) / sizeof(fixed[0]), n = nf + nhosts;
	struct acl_cred *us;
	struct stat st;
	int ret = 0;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		snprintf(why, whylen, "cannot create %s: %s", dir, strerror(-ret));
		return ret;
	}
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "%s: expected a directory", dir);
		return -ENOTDIR;
	}
	us = calloc(n, sizeof(*us));
	if (us == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (i < nf) {
			us[i].u.role = fixed[i];
		} else {
			us[i].u = hosts[i - nf];
			us[i].u.role = ICE_ROLE_HOST;
		}
		ret = acl_password(us[i].pass);
		if (ret < 0) {
			snprintf(why, whylen, "getrandom: %s", strerror(-ret));
			goto out;
		}
		us[i].u.password = us[i].pass;
		if (ice_redis_acl_user_name(us[i].name, sizeof(us[i].name), &us[i].u) < 0) {
			snprintf(why, whylen, "user %zu: a host user without a usable name", i);
			ret = -EINVAL;
			goto out;
		}
	}
	ret = acl_files(dir, fabric, us, n, why, whylen);
out:
	explicit_bzero(us, n * sizeof(*us));
	free(us);
	return ret < 0 ? ret : (int)n;
}
