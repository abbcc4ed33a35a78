#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The module dependency test: every arrow between ICE's top-level modules,
in the sources' #include "..." lines and in the build's link lines, must be
one that docs/architecture.md allows (its "layering" block, one line per
module: `module: allowed dependencies`). A wrong arrow fails with the file
and line (or the target) that makes it.

    check_layering.py SOURCE_ROOT BUILD_DIR
    check_layering.py --self-test
"""
import os
import re
import sys

CODE = ('.c', '.h', '.cu', '.cuh', '.hip', '.inc', '.cc', '.cpp')
HEADERS = ('.h', '.cuh', '.inc')
NOT_MODULES = {'tests', 'tools', 'docs', 'build', 'build-san', 'subprojects'}


def read_rules(doc):
    """{module: set(allowed)} from the ```layering block of doc."""
    rules, inside = {}, False
    with open(doc) as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if s == '```layering':
                inside = True
                continue
            if inside and s.startswith('```'):
                break
            if not inside or not s or s.startswith('#'):
                continue
            m = re.fullmatch(r'([a-z_]+):\s*(.*)', s)
            if m is None:
                sys.exit(f'{doc}:{n}: expected "module: dep dep ...", got {s!r}')
            rules[m.group(1)] = set(m.group(2).split())
    if not rules:
        sys.exit(f'{doc}: no ```layering block')
    return rules


def modules(root):
    return sorted(d for d in os.listdir(root)
                  if os.path.isdir(os.path.join(root, d)) and not d.startswith('.')
                  and d not in NOT_MODULES and os.path.exists(os.path.join(root, d, 'meson.build')))


def header_owners(root, mods):
    owner = {}
    for m in mods:
        for d, _, files in os.walk(os.path.join(root, m)):
            for f in files:
                if f.endswith(HEADERS):
                    owner.setdefault(f, set()).add(m)
    return owner


def include_arrows(root, mods, owner):
    """[(module, dep, 'file:line')] for every cross-module include."""
    out = []
    for m in mods:
        for d, _, files in os.walk(os.path.join(root, m)):
            for f in sorted(files):
                if not f.endswith(CODE):
                    continue
                path = os.path.join(d, f)
                with open(path, errors='replace') as fh:
                    for n, line in enumerate(fh, 1):
                        inc = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                        if inc is None:
                            continue
                        for dep in owner.get(os.path.basename(inc.group(1)), ()):
                            if dep != m:
                                out.append((m, dep, f'{os.path.relpath(path, root)}:{n}'))
    return out


def link_arrows(build, mods):
    """[(module, dep, target)] from build.ninja's link lines: a target
    defined in module m that links a static or shared library built in
    module dep."""
    out = []
    ninja = os.path.join(build, 'build.ninja')
    with open(ninja) as f:
        for line in f:
            t = re.match(r'build ([^:]+): (c|cpp|cuda)_LINKER (.*)', line)
            if t is None:
                continue
            target = t.group(1).split()[0]
            m = target.split('/')[0]
            if m not in mods:
                continue
            for lib in re.findall(r'(\S+/lib[^/\s]+\.(?:a|so))', t.group(3)):
                dep = lib.split('/')[0]
                if dep in mods and dep != m:
                    out.append((m, dep, target))
    return out


def check(rules, mods, arrows):
    bad = []
    for m in mods:
        if m not in rules:
            bad.append(f'module {m}/ is not in the layering block of docs/architecture.md')
    for m, dep, where in arrows:
        if m in rules and dep not in rules[m]:
            bad.append(f'{where}: {m} -> {dep} is not an allowed arrow '
                       f'({m} may use: {" ".join(sorted(rules[m])) or "nothing"})')
    return bad


def self_test():
    rules = {'common': set(), 'controller': {'common'}, 'host_agent': {'common'}}
    mods = ['common', 'controller', 'host_agent']
    ok = check(rules, mods, [('controller', 'common', 'a.c:1')])
    wrong = check(rules, mods, [('host_agent', 'controller', 'host_agent/x.c:3')])
    unknown = check(rules, mods + ['device'], [])
    assert ok == [], ok
    assert len(wrong) == 1 and 'host_agent -> controller' in wrong[0], wrong
    assert len(unknown) == 1 and 'device/' in unknown[0], unknown
    print('self-test: an allowed arrow passes, a wrong one and an undocumented module fail')


def main():
    if sys.argv[1:] == ['--self-test']:
        self_test()
        return 0
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, build = sys.argv[1], sys.argv[2]
    rules = read_rules(os.path.join(root, 'docs', 'architecture.md'))
    mods = modules(root)
    owner = header_owners(root, mods)
    dup = {h: sorted(o) for h, o in owner.items() if len(o) > 1}
    bad = [f'header {h} exists in {" and ".join(o)}: names must be unique' for h, o in dup.items()]
    inc = include_arrows(root, mods, owner)
    link = link_arrows(build, mods)
    bad += check(rules, mods, inc + link)
    for b in bad:
        print(b)
    used = sorted({(m, d) for m, d, _ in inc + link})
    print(f'{len(mods)} modules, {len(inc)} cross-module includes, {len(link)} cross-module '
          f'links, arrows used: ' + ', '.join(f'{m}->{d}' for m, d in used))
    print('layering: ' + ('FAIL' if bad else 'ok'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
