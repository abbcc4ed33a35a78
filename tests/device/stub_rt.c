// SPDX-License-Identifier: Apache-2.0
/* A stand-in vendor runtime library whose soname (libcudart.so.ice-missing)
 * names no file: a plugin linked against it fails to load exactly like
 * libice-cuda.so on a machine without libcudart. */
int ice_stub_rt_version(void);

int ice_stub_rt_version(void)
{
	return 1;
}
