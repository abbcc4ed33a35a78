// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: the tools it runs and the places it names. A growable text buffer,
 * iproute2 in batch mode (one `ip -n NS -batch -` per namespace), entering a
 * namespace for a while, and the names of namespaces, root links, state and
 * BPF pins.
 */
#include "fabric_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ice_log.h"

ICE_LOG_SUBSYSTEM(fabric_log_sub, "fabric");

/* ---- text buffers and tools --------------------------------------------------- */

void fab_bprintf(struct fab_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p != NULL && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;

		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);

		if (np == NULL)
			abort();
		b->p = np;
		b->cap = cap;
	}
}

void fab_buf_free(struct fab_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Run argv with `in` on its stdin; its stderr (and stdout when out is
 * NULL) is kept in err. Returns the exit status, or -errno. */
int fab_run(char *const argv[], const char *in, struct fab_buf *out, char *err, size_t errlen)
{
	int pin[2], pout[2], perr[2], status;
	pid_t pid;

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	if (in != NULL) {
		size_t left = strlen(in);

		while (left > 0) {
			ssize_t n = write(pin[1], in, left);

			if (n <= 0)
				break;
			in += n;
			left -= (size_t)n;
		}
	}
	close(pin[1]);
	{
		char tmp[4096];
		size_t elen = 0;
		ssize_t n;

		while ((n = read(pout[0], tmp, sizeof(tmp))) > 0)
			if (out != NULL)
				fab_bprintf(out, "%.*s", (int)n, tmp);
		while ((n = read(perr[0], tmp, sizeof(tmp))) > 0) {
			size_t c = (size_t)n;

			if (err != NULL && elen + 1 < errlen) {
				if (c > errlen - 1 - elen)
					c = errlen - 1 - elen;
				memcpy(err + elen, tmp, c);
				elen += c;
			}
		}
		if (err != NULL && errlen > 0)
			err[elen] = '\0';
	}
	close(pout[0]);
	close(perr[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* `TOOL [-n NS] -batch -` over text; prints what failed. */
int fab_batch(const char *tool, const char *ns, const char *text)
{
	char *argv[8], err[2048];
	int i = 0, ret;

	if (text == NULL || *text == '\0')
		return 0;
	argv[i++] = (char *)tool;
	if (ns != NULL) {
		argv[i++] = "-n";
		argv[i++] = (char *)ns;
	}
	argv[i++] = "-batch";
	argv[i++] = "-";
	argv[i] = NULL;
	ret = fab_run(argv, text, NULL, err, sizeof(err));
	if (ret != 0) {
		ice_err(FAB_SUB, "%s -batch in %s failed (%d): %s", tool,
			ns ? ns : "the root namespace", ret, err);
		return -EIO;
	}
	return 0;
}

int fab_rm_tree(const char *path)
{
	char *argv[] = {"rm", "-rf", "--one-file-system", (char *)path, NULL};

	return fab_run(argv, NULL, NULL, NULL, 0);
}

/* ---- names and paths ---------------------------------------------------------- */

static uint32_t fab_hash(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h;
}

void fab_ns_name(const struct topo *t, const struct topo_node *n, char *buf, size_t len)
{
	snprintf(buf, len, "ice%s-%s", t->name, n->name);
}

void fab_mgmt_bridge(const char *fabric, char *buf, size_t len)
{
	snprintf(buf, len, "ice%04xbr", fab_hash(fabric) & 0xffff);
}

void fab_mgmt_root_veth(const char *fabric, uint32_t i, char *buf, size_t len)
{
	snprintf(buf, len, "ice%04xm%u", fab_hash(fabric) & 0xffff, i);
}

unsigned int fab_mgmt_byte(const char *fabric)
{
	return (fab_hash(fabric) >> 16) % 250 + 1;
}

void fab_state_path(const char *fabric, const char *file, char *buf, size_t len)
{
	snprintf(buf, len, FAB_STATE_DIR "/%s%s%s", fabric, file ? "/" : "", file ? file : "");
}

void fab_pin_path(const char *fabric, const char *node, char *buf, size_t len)
{
	snprintf(buf, len, FAB_PIN_DIR "/ice%s%s%s", fabric, node ? "/" : "", node ? node : "");
}

char *fab_addr_str(struct in_addr a, char *buf)
{
	inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
	return buf;
}

bool fab_dir_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- namespaces --------------------------------------------------------------- */

/* Run fn(arg) inside namespace ns, then come back. */
int fab_in_netns(const char *ns, int (*fn)(void *arg), void *arg)
{
	char path[256];
	int self, fd, ret;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || fd < 0) {
		ret = -errno;
		ice_err(FAB_SUB, "namespace %s: %s", ns, strerror(-ret));
		goto out;
	}
	if (setns(fd, CLONE_NEWNET) < 0) {
		ret = -errno;
		ice_err(FAB_SUB, "cannot enter %s: %s", ns, strerror(-ret));
		goto out;
	}
	ret = fn(arg);
	if (setns(self, CLONE_NEWNET) < 0) {
		ice_err(FAB_SUB, "cannot return from %s: %s", ns, strerror(errno));
		abort(); /* we would configure the wrong namespace from here on */
	}
out:
	if (fd >= 0)
		close(fd);
	if (self >= 0)
		close(self);
	return ret;
}
