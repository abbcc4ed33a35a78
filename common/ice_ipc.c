// SPDX-License-Identifier: Apache-2.0
#include "ice_ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *ice_ipc_group_default(void)
{
	const char *g = getenv(ICE_IPC_GROUP_ENV);

	return g != NULL && *g != '\0' ? g : ICE_IPC_GROUP_DEFAULT;
}

int ice_ipc_perm_init(struct ice_ipc_perm *p, const char *group)
{
	struct group gr, *res = NULL;
	char buf[4096];
	int n;

	if (group == NULL || *group == '\0')
		group = ice_ipc_group_default();
	memset(p, 0, sizeof(*p));
	p->uid = geteuid();
	p->gid = getegid();
	p->mode = 0600;
	n = snprintf(p->group, sizeof(p->group), "%s", group);
	if (n < 0 || (size_t)n >= sizeof(p->group))
		return -EINVAL;
	if (getgrnam_r(group, &gr, buf, sizeof(buf), &res) != 0 || res == NULL)
		return -ENOENT;
	p->grouped = true;
	p->gid = gr.gr_gid;
	p->mode = 0660;
	return 0;
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFSOCK:
		return "a socket";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a FIFO";
	default:
		return "a device";
	}
}

int ice_ipc_check(const struct stat *st, mode_t type, const struct ice_ipc_perm *p, char *why,
		  size_t len)
{
	if ((st->st_mode & S_IFMT) != type)
		snprintf(why, len, "is %s, expected %s", type_name(st->st_mode), type_name(type));
	else if (st->st_uid != 0 && st->st_uid != p->uid)
		snprintf(why, len, "owned by uid %u, expected root or uid %u", (unsigned)st->st_uid,
			 (unsigned)p->uid);
	else if (st->st_mode & 0007)
		snprintf(why, len, "mode %04o gives others access, expected at most %04o",
			 (unsigned)(st->st_mode & 07777), (unsigned)p->mode);
	else if (st->st_mode & 07000)
		snprintf(why, len, "mode %04o has set-id or sticky bits, expected at most %04o",
			 (unsigned)(st->st_mode & 07777), (unsigned)p->mode);
	else if ((st->st_mode & 0070) && !p->grouped)
		snprintf(why, len,
			 "mode %04o gives group %u access and group '%s' does not exist, expected "
			 "at most 0600",
			 (unsigned)(st->st_mode & 07777), (unsigned)st->st_gid, p->group);
	else if ((st->st_mode & 0070) && st->st_gid != p->gid)
		snprintf(why, len, "mode %04o gives group %u access, expected group '%s' (%u)",
			 (unsigned)(st->st_mode & 07777), (unsigned)st->st_gid, p->group,
			 (unsigned)p->gid);
	else
		return 0;
	return -EPERM;
}

int ice_ipc_check_dir(const char *path, const struct ice_ipc_perm *p, char *why, size_t len)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		int err = errno;

		snprintf(why, len, "%s", strerror(err));
		return -err;
	}
	if (!S_ISDIR(st.st_mode))
		snprintf(why, len, "is %s, expected a directory", type_name(st.st_mode));
	else if (st.st_uid != 0 && st.st_uid != p->uid)
		snprintf(why, len, "owned by uid %u, expected root or uid %u", (unsigned)st.st_uid,
			 (unsigned)p->uid);
	else if ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX))
		snprintf(why, len,
			 "mode %04o lets group or others replace files in it, expected at most "
			 "0755 (or the sticky bit)",
			 (unsigned)(st.st_mode & 07777));
	else
		return 0;
	return -EPERM;
}

int ice_ipc_fset(int fd, const struct ice_ipc_perm *p)
{
	if (p->grouped && fchown(fd, (uid_t)-1, p->gid) < 0)
		return -errno;
	return fchmod(fd, p->mode) < 0 ? -errno : 0;
}

int ice_ipc_set(const char *path, const struct ice_ipc_perm *p)
{
	if (p->grouped && lchown(path, (uid_t)-1, p->gid) < 0)
		return -errno;
	/* never follows: a link is refused (EOPNOTSUPP) */
	return fchmodat(AT_FDCWD, path, p->mode, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* Open path for reading and check it: a regular file owned by root or our
 * euid, with none of the bits in deny (secret: group and others may not
 * read; public: may not write). */
static int checked_open(const char *path, mode_t deny, const char *expected, char *why, size_t len)
{
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, len, "%s: cannot open: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(why, len, "%s: cannot stat: %s", path, strerror(-ret));
		goto err;
	}
	ret = -EPERM;
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s is %s; expected a regular file", path,
			 type_name(st.st_mode));
		goto err;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(why, len,
			 "%s is owned by uid %u; expected the service's user (uid %u) or root "
			 "(chown %u %s)",
			 path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid(), path);
		goto err;
	}
	if (st.st_mode & deny) {
		snprintf(why, len, "%s %s (mode %04o); expected %s", path,
			 deny & 044 ? "is accessible by group or others"
				    : "is writable by group or others",
			 (unsigned)(st.st_mode & 07777), expected);
		goto err;
	}
	return fd;
err:
	close(fd);
	return ret;
}

int ice_ipc_secret_open(const char *path, char *why, size_t len)
{
	char expected[300];

	snprintf(expected, sizeof(expected), "mode 0600 or 0400 (chmod 600 %s)", path);
	return checked_open(path, 07077, expected, why, len);
}

int ice_ipc_public_open(const char *path, char *why, size_t len)
{
	char expected[300];

	snprintf(expected, sizeof(expected), "at most 0644 (chmod 644 %s)", path);
	return checked_open(path, 07022, expected, why, len);
}
