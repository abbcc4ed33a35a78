#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/redis-schema.md against the key table of common/ice_redis.c: every
key the documentation's tables list is in the table and the other way
round, so neither can drift. Prints both sides' differences.

    check_redis_schema.py SOURCE_ROOT
"""
import re
import sys


def doc_keys(path):
    keys = set()
    with open(path) as f:
        for line in f:
            m = re.match(r'\|\s*`(ice:<F>:[^`]*)`\s*\|', line)
            if m:
                keys.add(m.group(1))
    return keys


def code_keys(path):
    with open(path) as f:
        src = f.read()
    return set(re.findall(r'\[ICE_RK_[A-Z_]+\]\s*=\s*"([^"]+)"', src))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    doc = doc_keys(f'{root}/docs/redis-schema.md')
    code = code_keys(f'{root}/common/ice_redis.c')
    if not doc or not code:
        print(f'no keys found (docs: {len(doc)}, table: {len(code)})')
        return 1
    for k in sorted(doc - code):
        print(f'docs/redis-schema.md lists {k}, common/ice_redis.c has no such key')
    for k in sorted(code - doc):
        print(f'common/ice_redis.c has {k}, docs/redis-schema.md does not list it')
    print(f'{len(doc)} documented keys, {len(code)} in the table')
    return 0 if doc == code else 1


if __name__ == '__main__':
    sys.exit(main())
