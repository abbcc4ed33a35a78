#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check a Prometheus text exposition (format 0.0.4) the way a scraper
would read it, and the naming rules we follow:

    check_prom_text.py FILE [--need NAME[=VALUE]]... [--self-test]

- every line is '# HELP name text', '# TYPE name type' or a sample
  'name{label="value",...} number'; label values escaped as the format says;
- each family has one TYPE, before its samples; samples belong to their
  family (histograms: _bucket with le, _sum, _count);
- names: [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total; histograms'
  buckets are cumulative, end with le="+Inf" equal to _count;
- no two samples with the same name and labels;
- --need NAME (a sample of that name exists) or NAME=VALUE (one of its
  samples has that value; NAME may carry labels as printed).
Prints what is wrong, one line each; exit 1 if anything is.
"""
import math
import re
import sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(r'^(' + NAME + r')(\{(?:' + LABEL + r'(?:,' + LABEL + r')*,?)?\})?'
                    r' ([^ ]+)( -?[0-9]+)?$')
TYPES = {'counter', 'gauge', 'histogram', 'summary', 'untyped'}


def number(s):
    if s in ('+Inf', '-Inf', 'NaN'):
        return float(s.replace('Inf', 'inf').replace('NaN', 'nan'))
    return float(s)


def parse(text):
    errs, types, samples, seen = [], {}, [], set()
    for n, line in enumerate(text.split('\n'), 1):
        if line == '':
            continue
        if line.startswith('#'):
            m = re.match(r'^# (HELP|TYPE) (' + NAME + r')(?: (.*))?$', line)
            if not m:
                if not line.startswith('# '):
                    errs.append(f'line {n}: bad comment: {line!r}')
                continue
            if m.group(1) == 'TYPE':
                if m.group(3) not in TYPES:
                    errs.append(f'line {n}: unknown type {m.group(3)!r}')
                if m.group(2) in types:
                    errs.append(f'line {n}: second TYPE for {m.group(2)}')
                if any(s[0] == m.group(2) or s[3] == m.group(2) for s in samples):
                    errs.append(f'line {n}: TYPE of {m.group(2)} after its samples')
                types[m.group(2)] = m.group(3)
            continue
        m = SAMPLE.match(line)
        if not m:
            errs.append(f'line {n}: not a sample: {line!r}')
            continue
        name, labels = m.group(1), dict(re.findall(LABEL, m.group(2) or ''))
        try:
            value = number(m.group(7))
        except ValueError:
            errs.append(f'line {n}: value {m.group(7)!r} is not a number')
            continue
        family = name
        for suf in ('_bucket', '_sum', '_count'):
            if name.endswith(suf) and types.get(name[:-len(suf)]) == 'histogram':
                family = name[:-len(suf)]
        if family not in types:
            errs.append(f'line {n}: {name} has no TYPE before it')
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            errs.append(f'line {n}: duplicate sample {name}{labels}')
        seen.add(key)
        samples.append((name, labels, value, family, n, m.group(2) or ''))
    for fam, t in types.items():
        if t == 'counter' and not fam.endswith('_total'):
            errs.append(f'counter {fam} does not end in _total')
        if t == 'histogram':
            rows = [s for s in samples if s[3] == fam]
            groups = {}
            for name, labels, value, _, n, _ in rows:
                rest = tuple(sorted((k, v) for k, v in labels.items() if k != 'le'))
                groups.setdefault(rest, {'b': [], 'count': None})
                if name == fam + '_bucket':
                    if 'le' not in labels:
                        errs.append(f'line {n}: bucket without le')
                        continue
                    groups[rest]['b'].append((number(labels['le']), value))
                elif name == fam + '_count':
                    groups[rest]['count'] = value
            for rest, g in groups.items():
                b = g['b']
                if not b or not math.isinf(b[-1][0]):
                    errs.append(f'{fam}: buckets do not end with le="+Inf"')
                    continue
                if any(b[i][0] >= b[i + 1][0] or b[i][1] > b[i + 1][1]
                       for i in range(len(b) - 1)):
                    errs.append(f'{fam}: buckets not increasing and cumulative')
                if g['count'] is None or g['count'] != b[-1][1]:
                    errs.append(f'{fam}: _count {g["count"]} != +Inf bucket {b[-1][1]}')
    return errs, samples


def need(samples, spec):
    want = None
    if '=' in spec and not spec.rstrip().endswith('"}'):
        spec, want = spec.rsplit('=', 1)
    for name, labels, value, _, _, lab in samples:
        if spec in (name, name + lab):
            if want is None or value == float(want):
                return None
    return f'no sample {spec}' + (f' = {want}' if want is not None else '')


def self_test():
    good = ('# HELP a_total x\n# TYPE a_total counter\na_total 3\n'
            '# TYPE h histogram\nh_bucket{le="0.1"} 1\nh_bucket{le="+Inf"} 2\n'
            'h_sum 0.3\nh_count 2\n# TYPE g gauge\ng{link="a:b",dir="up"} 0.5\n')
    bad = [('# TYPE a counter\na 1\n', 'does not end in _total'),
           ('a_total 1\n', 'no TYPE'),
           ('# TYPE g gauge\ng{x="1"} 1\ng{x="1"} 2\n', 'duplicate'),
           ('# TYPE g gauge\ng{x=1} 1\n', 'not a sample'),
           ('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n',
            'cumulative'),
           ('# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\n', '+Inf'),
           ('# TYPE g gauge\ng fast\n', 'not a number')]
    errs, s = parse(good)
    assert not errs, errs
    assert need(s, 'g{link="a:b",dir="up"}=0.5') is None
    assert need(s, 'a_total=4') is not None
    for text, what in bad:
        errs, _ = parse(text)
        assert any(what in e for e in errs), (text, errs)
    print('self-test ok')
    return 0


def main():
    if '--self-test' in sys.argv:
        return self_test()
    args = sys.argv[1:]
    path, needs = args[0], []
    i = 1
    while i < len(args):
        if args[i] == '--need':
            needs.append(args[i + 1])
            i += 2
        else:
            print(f'unknown argument {args[i]!r}')
            return 2
    text = open(path).read()
    errs, samples = parse(text)
    errs += [e for e in (need(samples, s) for s in needs) if e]
    for e in errs:
        print(f'{path}: {e}')
    print(f'{path}: {len(samples)} samples, {len(errs)} problems')
    return 1 if errs else 0


if __name__ == '__main__':
    sys.exit(main())
