/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_ipc: who may use the files of ICE's local IPC on a host — the agent's
 * event socket (ice_event.h) and the control blocks (ice_ctrl.h).
 *
 * Both belong to their creator (root, the agent) and to one group, `ice` by
 * default, mode 0660: a process in the group may report events and have its
 * QPs steered, others may not. The group's name comes from the agent's
 * `group` key, or from ICE_GROUP in the environment (the libraries, and the
 * agent's default). When the group does not exist the files are the
 * creator's only (0600): then only root's processes take part.
 *
 * Files are created exclusively (O_EXCL; bind(2) is exclusive by itself) and
 * opened without following links (O_NOFOLLOW, lstat), then checked with
 * ice_ipc_check() before they are used or, when stale, removed.
 */
#ifndef ICE_IPC_H
#define ICE_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define ICE_IPC_GROUP_DEFAULT "ice"
#define ICE_IPC_GROUP_ENV     "ICE_GROUP"
#define ICE_IPC_GROUP_MAX     32

struct ice_ipc_perm {
	char group[ICE_IPC_GROUP_MAX]; /* the group asked for */
	bool grouped;		       /* it exists: files are 0660 and the group's */
	gid_t gid;		       /* the group's id (valid when grouped) */
	uid_t uid;		       /* the owner accepted besides root: our euid */
	mode_t mode;		       /* 0660 when grouped, else 0600 */
};

/* The group's name: ICE_GROUP when set and not empty, else "ice". */
const char *ice_ipc_group_default(void);

/* Resolve group (NULL or "": ice_ipc_group_default()). 0, or -ENOENT when no
 * such group exists (p then says owner only, 0600), -EINVAL when the name is
 * too long; p is filled in every case. */
int ice_ipc_perm_init(struct ice_ipc_perm *p, const char *group);

/*
 * May an IPC file with these attributes (lstat or fstat of it) be used, or
 * removed as stale? Yes when it is of type (S_IFREG or S_IFSOCK), owned by
 * root or p->uid, has no bits for others, no set-id or sticky bits, and group
 * bits only when its group is p's group. 0, or -EPERM with why filled
 * ("owned by uid 1000, expected root or uid 0").
 */
int ice_ipc_check(const struct stat *st, mode_t type, const struct ice_ipc_perm *p, char *why,
		  size_t len);

/* A directory ICE creates IPC files in: owned by root or p->uid, and not
 * writable by group or others unless sticky (then nobody can replace what we
 * create there). 0, -errno from lstat, or -EPERM with why filled. */
int ice_ipc_check_dir(const char *path, const struct ice_ipc_perm *p, char *why, size_t len);

/* Give the open regular file fd p's group and mode (fchown, fchmod). 0 or
 * -errno (-EPERM: we may not give it that group). */
int ice_ipc_fset(int fd, const struct ice_ipc_perm *p);

/* The same for a path that is not a symbolic link (a socket just bound; its
 * directory passed ice_ipc_check_dir()). */
int ice_ipc_set(const char *path, const struct ice_ipc_perm *p);

/*
 * Open a secret (the plans' private key, a Redis password file) for reading, after the
 * checks a secret needs: a regular file, owned by root or our euid, with no
 * bits for group or others and no set-id bits (0600 or 0400). The fd, or
 * -errno with why filled: "PATH is accessible by group or others (mode
 * 0644); expected mode 0600 or 0400 (chmod 600 PATH)" (-EPERM), "PATH:
 * cannot open: ..." (open's errno).
 */
int ice_ipc_secret_open(const char *path, char *why, size_t len);

/*
 * Open a file others may read but must not change (the plans' public keys):
 * a regular file owned by root or our euid, not writable by group or others,
 * no set-id bits. The fd, or -errno with why filled as above ("PATH is
 * writable by group or others (mode 0664); expected at most 0644 ...").
 */
int ice_ipc_public_open(const char *path, char *why, size_t len);

#endif /* ICE_IPC_H */
