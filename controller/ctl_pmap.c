// SPDX-License-Identifier: Apache-2.0
/* ctl_pmap: ice-probe's port -> path maps (see ctl_pmap.h). */
#include "ctl_pmap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctl_pmap_fini(struct ctl_pmap *m)
{
	if (m == NULL)
		return;
	for (uint32_t i = 0; i < m->npaths; i++)
		free(m->paths[i].ports);
	free(m->paths);
	memset(m, 0, sizeof(*m));
}

static int parse_path(json_t *jp, struct ctl_pmap_path *p)
{
	const char *name = json_string_value(json_object_get(jp, "path"));
	json_t *ports = json_object_get(jp, "ports"), *v;
	size_t i;

	if (name == NULL || !json_is_array(ports) ||
	    snprintf(p->name, sizeof(p->name), "%s", name) >= (int)sizeof(p->name))
		return -EINVAL;
	p->ports = calloc(json_array_size(ports) + 1, sizeof(*p->ports));
	if (p->ports == NULL)
		return -ENOMEM;
	json_array_foreach(ports, i, v)
	{
		json_int_t x = json_integer_value(v);

		if (!json_is_integer(v) || x < 1 || x > 65535)
			return -EINVAL;
		p->ports[p->nports++] = (uint16_t)x;
	}
	return 0;
}

int ctl_pmap_parse(const char *json, struct ctl_pmap *m)
{
	json_t *o = json_loads(json, 0, NULL), *paths, *jp;
	const char *src, *dst;
	size_t i;
	int ret = -EINVAL;

	memset(m, 0, sizeof(*m));
	if (o == NULL)
		return -EINVAL;
	src = json_string_value(json_object_get(o, "src"));
	dst = json_string_value(json_object_get(o, "dst"));
	paths = json_object_get(o, "paths");
	if (src == NULL || dst == NULL || inet_pton(AF_INET, src, &m->src) != 1 ||
	    inet_pton(AF_INET, dst, &m->dst) != 1 || !json_is_array(paths) ||
	    json_array_size(paths) == 0)
		goto out;
	m->ts_ms = (uint64_t)json_integer_value(json_object_get(o, "ts_ms"));
	m->paths = calloc(json_array_size(paths), sizeof(*m->paths));
	if (m->paths == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	json_array_foreach(paths, i, jp)
	{
		ret = parse_path(jp, &m->paths[m->npaths++]);
		if (ret < 0)
			goto out;
	}
	ret = 0;
out:
	json_decref(o);
	if (ret < 0)
		ctl_pmap_fini(m);
	return ret;
}

int ctl_pmap_path_of(const struct ctl_pmap *m, uint16_t sport)
{
	for (uint32_t i = 0; i < m->npaths; i++)
		for (uint32_t j = 0; j < m->paths[i].nports; j++)
			if (m->paths[i].ports[j] == sport)
				return (int)i;
	return -1;
}

int ctl_pmap_find(const struct ctl_pmap *m, const char *name)
{
	for (uint32_t i = 0; i < m->npaths; i++)
		if (strcmp(m->paths[i].name, name) == 0)
			return (int)i;
	return -1;
}
