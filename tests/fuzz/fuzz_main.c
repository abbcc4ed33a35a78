// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_main: a bounded, deterministic stand-in for libFuzzer, so the fuzz
 * harnesses run in every build (gcc, no -Dfuzz). It feeds every file named
 * on the command line (or found in a named directory) through
 * LLVMFuzzerTestOneInput, then N inputs made by mutating them with a fixed-seed
 * PRNG. Every input is an exact-size heap copy so that sanitizers and valgrind
 * see any read past its end.
 *
 *   fuzz_wire_replay [-n N] [-s SEED] PATH...   (fuzz_qp_replay alike)
 *
 * A harness may define three optional hooks (weak here, so one without them
 * links): fuzz_replay_fixup() repairs half the mutants (fuzz_wire: their
 * ICRC) so they get past the first check, fuzz_replay_note() sees every input
 * once run, and fuzz_replay_summary() prints a line or two about what the
 * inputs did after the generic one.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FUZZ_MAX_INPUTS 1024
#define FUZZ_MAX_INPUT	16384

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_replay_fixup(uint8_t *buf, size_t len) __attribute__((weak));
void fuzz_replay_note(const uint8_t *buf, size_t len) __attribute__((weak));
void fuzz_replay_summary(void) __attribute__((weak));

struct input {
	uint8_t *data;
	size_t len;
};

static struct input inputs[FUZZ_MAX_INPUTS];
static size_t n_inputs;
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t rng_below(size_t n)
{
	return n == 0 ? 0 : (size_t)(rng_next() % n);
}

static void run_one(const uint8_t *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (copy == NULL) {
		fprintf(stderr, "fuzz_main: out of memory\n");
		exit(1);
	}
	if (len != 0)
		memcpy(copy, data, len);
	LLVMFuzzerTestOneInput(copy, len);
	if (fuzz_replay_note != NULL)
		fuzz_replay_note(copy, len);
	free(copy);
}

static int load_file(const char *path)
{
	uint8_t buf[FUZZ_MAX_INPUT];
	FILE *f;
	size_t len;

	if (n_inputs == FUZZ_MAX_INPUTS)
		return 0;
	f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "fuzz_main: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	inputs[n_inputs].data = malloc(len ? len : 1);
	if (inputs[n_inputs].data == NULL)
		return -ENOMEM;
	memcpy(inputs[n_inputs].data, buf, len);
	inputs[n_inputs].len = len;
	n_inputs++;
	return 0;
}

static int load_path(const char *path)
{
	char sub[4096];
	struct stat st;
	struct dirent *e;
	DIR *d;
	int ret = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "fuzz_main: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode))
		return load_file(path);
	d = opendir(path);
	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL && ret == 0) {
		if (e->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= (int)sizeof(sub))
			continue;
		if (stat(sub, &st) == 0 && S_ISREG(st.st_mode))
			ret = load_file(sub);
	}
	closedir(d);
	return ret;
}

/* Values that sit on the decoder's edges. */
static const uint8_t interesting[] = {0x00, 0x01, 0x03, 0x04, 0x05, 0x0b, 0x0c, 0x0d,
				      0x10, 0x11, 0x12, 0x1f, 0x20, 0x30, 0x3f, 0x40,
				      0x60, 0x7f, 0x80, 0x81, 0xc0, 0xf0, 0xfe, 0xff};

static size_t mutate(uint8_t *buf, size_t len)
{
	int rounds = 1 + (int)rng_below(4);

	for (int r = 0; r < rounds; r++) {
		size_t at = rng_below(len ? len : 1);

		switch (rng_below(10)) {
		case 0: /* flip a bit */
			if (len)
				buf[at] ^= (uint8_t)(1u << rng_below(8));
			break;
		case 1: /* random byte */
			if (len)
				buf[at] = (uint8_t)rng_next();
			break;
		case 2: /* interesting byte */
			if (len)
				buf[at] = interesting[rng_below(sizeof(interesting))];
			break;
		case 3: /* first byte (fuzz_wire: the opcode; fuzz_qp: the setup) */
			if (len)
				buf[0] = interesting[rng_below(sizeof(interesting))];
			break;
		case 4: /* second byte's low bits (fuzz_wire: PadCnt / TVer) */
			if (len > 1)
				buf[1] = (uint8_t)((buf[1] & 0xc0) | (rng_next() & 0x3f));
			break;
		case 5: /* truncate */
			len = rng_below(len + 1);
			break;
		case 6: /* grow by 1-8 random bytes */
			for (size_t n = 1 + rng_below(8); n > 0 && len < FUZZ_MAX_INPUT; n--)
				buf[len++] = (uint8_t)rng_next();
			break;
		case 7: /* delete a byte */
			if (len) {
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
			}
			break;
		case 9: { /* splice: insert up to 64 bytes of another input */
			const struct input *o = &inputs[rng_below(n_inputs)];
			size_t from = rng_below(o->len), n = 1 + rng_below(64);

			if (o->len == 0)
				break;
			if (n > o->len - from)
				n = o->len - from;
			if (n > FUZZ_MAX_INPUT - len)
				n = FUZZ_MAX_INPUT - len;
			memmove(buf + at + n, buf + at, len - at);
			memcpy(buf + at, o->data + from, n);
			len += n;
			break;
		}
		default: /* insert a byte */
			if (len < FUZZ_MAX_INPUT) {
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = (uint8_t)rng_next();
				len++;
			}
			break;
		}
	}
	return len;
}

int main(int argc, char **argv)
{
	unsigned long n_mut = 2000000, seed = 1;
	static uint8_t buf[FUZZ_MAX_INPUT];
	struct timespec t0, t1;
	int opt;

	while ((opt = getopt(argc, argv, "n:s:")) != -1) {
		switch (opt) {
		case 'n':
			n_mut = strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-n mutations] [-s seed] PATH...\n", argv[0]);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		if (load_path(argv[i]) != 0)
			return 1;
	if (n_inputs == 0) {
		fprintf(stderr, "fuzz_main: no corpus inputs given\n");
		return 1;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < n_inputs; i++)
		run_one(inputs[i].data, inputs[i].len);

	rng_state = seed ? seed : 1;
	for (unsigned long m = 0; m < n_mut; m++) {
		const struct input *in = &inputs[rng_below(n_inputs)];
		size_t len = in->len;

		memcpy(buf, in->data, len);
		len = mutate(buf, len);
		if (fuzz_replay_fixup != NULL && rng_below(2))
			fuzz_replay_fixup(buf, len);
		run_one(buf, len);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);

	printf("fuzz_main: %zu corpus inputs + %lu mutants (seed %lu) in %.2f s\n", n_inputs, n_mut,
	       seed, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (fuzz_replay_summary != NULL)
		fuzz_replay_summary();
	for (size_t i = 0; i < n_inputs; i++)
		free(inputs[i].data);
	return 0;
}
