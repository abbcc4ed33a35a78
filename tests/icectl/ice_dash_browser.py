#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Headless Chromium against icectl serve's dashboard (the tests' browser).

  ice_dash_browser.py dom URL [--wait MS]         the DOM once the page has run
                                                  MS ms of its (virtual) time
  ice_dash_browser.py links URL [--wait MS]       its directed links as JSON:
                                                  [{link, from, to, state, stroke}]
  ice_dash_browser.py shot URL PNG [--wait MS]    a screenshot (1280x900)
  ice_dash_browser.py watch URL --link A:B --from A --to B --then CMD
        keeps the page open (real time), waits for two refreshes, runs CMD
        (e.g. ice-fabric link ... down), then polls the page every 50 ms until
        that directed link is red; prints {"before", "at_cmd", "red_at",
        "refreshes_after", "seconds"} and exits 0 when it turned red within
        two refreshes of CMD's return, 1 otherwise. --png FILE: a screenshot
        of the page once red. Through the DevTools protocol on a pipe
        (--remote-debugging-pipe): no port, no extra packages.

Chromium refuses to run as root without --no-sandbox (its setuid/namespace
sandbox needs an unprivileged user), so as root it is passed; the page is
ours and local. Exit 77 when no chromium is installed.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# the state of every directed link the page draws
LINKS_JS = """JSON.stringify([...document.querySelectorAll('line.link')].map(l => ({
  link: l.dataset.link, from: l.dataset.from, to: l.dataset.to, state: l.dataset.state,
  stroke: l.getAttribute('stroke')})))"""


def chromium():
    for name in ('chromium', 'chromium-browser', 'google-chrome'):
        path = shutil.which(name)
        if path:
            return path
    print('skipped: no chromium installed (tools/setup installs Debian\'s chromium)')
    sys.exit(77)


def base_args(profile):
    args = [chromium(), '--headless=new', '--disable-gpu', '--no-first-run',
            '--disable-extensions', '--disable-background-networking',
            '--user-data-dir=' + profile, '--window-size=1280,900']
    if os.geteuid() == 0:
        args.append('--no-sandbox')  # as root Chromium runs only without its sandbox
    return args


def run_once(url, extra, wait_ms, timeout=60):
    with tempfile.TemporaryDirectory(prefix='ice-chromium-') as profile:
        cmd = base_args(profile) + ['--virtual-time-budget=%d' % wait_ms] + extra + [url]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           check=False)
        if p.returncode != 0:
            sys.stderr.write(p.stderr.decode(errors='replace')[-2000:])
            sys.exit('chromium exited %d' % p.returncode)
        return p.stdout.decode(errors='replace')


class Cdp:
    """The DevTools protocol over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

    def __init__(self, profile):
        to_chrome_r, self.wfd = os.pipe()
        self.rfd, from_chrome_w = os.pipe()
        args = base_args(profile) + ['--remote-debugging-pipe', 'about:blank']
        # Chromium reads fd 3 and writes fd 4: a shell puts the pipe ends there
        shell = 'exec "$0" "$@" 3<&%d 4>&%d' % (to_chrome_r, from_chrome_w)
        self.proc = subprocess.Popen(['sh', '-c', shell] + args,
                                     pass_fds=(to_chrome_r, from_chrome_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b''
        self.next_id = 0
        self.session = None

    def call(self, method, params=None, session=True):
        self.next_id += 1
        msg = {'id': self.next_id, 'method': method, 'params': params or {}}
        if session and self.session:
            msg['sessionId'] = self.session
        os.write(self.wfd, json.dumps(msg).encode() + b'\0')
        while True:
            while b'\0' not in self.buf:
                chunk = os.read(self.rfd, 1 << 16)
                if not chunk:
                    raise RuntimeError('chromium closed the pipe')
                self.buf += chunk
            raw, self.buf = self.buf.split(b'\0', 1)
            m = json.loads(raw)
            if m.get('id') == self.next_id:
                if 'error' in m:
                    raise RuntimeError('%s: %s' % (method, m['error']))
                return m['result']

    def open(self, url):
        t = self.call('Target.createTarget', {'url': url}, session=False)
        a = self.call('Target.attachToTarget', {'targetId': t['targetId'], 'flatten': True},
                      session=False)
        self.session = a['sessionId']

    def eval(self, expr):
        r = self.call('Runtime.evaluate', {'expression': expr, 'returnByValue': True})
        return r['result'].get('value')

    def screenshot(self, path):
        r = self.call('Page.captureScreenshot', {'format': 'png'})
        with open(path, 'wb') as f:
            f.write(base64.b64decode(r['data']))

    def close(self):
        try:
            self.call('Browser.close', session=False)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def page_state(c, a):
    s = c.eval('JSON.stringify({n: Number(document.body?.dataset.refreshes || 0), links: %s})'
               % LINKS_JS)
    if s is None:  # the page is not there yet (still loading)
        return 0, None
    s = json.loads(s)
    mine = [l for l in json.loads(s['links'])
            if l['link'] == a.link and l['from'] == getattr(a, 'from') and l['to'] == a.to]
    return s['n'], (mine[0] if mine else None)


def watch(a):
    out = {}
    with tempfile.TemporaryDirectory(prefix='ice-chromium-') as profile:
        c = Cdp(profile)
        try:
            c.open(a.url)
            end = time.time() + 20
            while True:
                n, l = page_state(c, a)
                if n >= 2 and l is not None:
                    break
                if time.time() > end:
                    sys.exit('the page did not refresh twice with link %s %s>%s in 20 s '
                             '(refreshes %d)' % (a.link, getattr(a, 'from'), a.to, n))
                time.sleep(0.05)
            out['before'] = l
            if l['state'] == 'down' or l['stroke'] == '#e00000':
                sys.exit('the link is red before %r' % a.then)
            subprocess.run(a.then, shell=True, check=True)
            n0, _ = page_state(c, a)
            t0 = time.time()
            out['at_cmd'] = n0
            while time.time() - t0 < 15:
                n, l = page_state(c, a)
                if l is not None and l['state'] == 'down' and l['stroke'] == '#e00000':
                    out.update(red_at=n, refreshes_after=n - n0,
                               seconds=round(time.time() - t0, 3), link=l)
                    break
                time.sleep(0.05)
            if a.png and 'red_at' in out:
                c.screenshot(a.png)
        finally:
            c.close()
    print(json.dumps(out))
    return 0 if out.get('refreshes_after', 99) <= 2 else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('mode', choices=['dom', 'links', 'shot', 'watch'])
    ap.add_argument('url')
    ap.add_argument('out', nargs='?', help='shot: the PNG')
    ap.add_argument('--png', help='watch: a screenshot once red')
    ap.add_argument('--wait', type=int, default=3000)
    ap.add_argument('--link')
    ap.add_argument('--from')
    ap.add_argument('--to')
    ap.add_argument('--then')
    a = ap.parse_args()
    if a.mode == 'dom':
        sys.stdout.write(run_once(a.url, ['--dump-dom'], a.wait))
    elif a.mode == 'links':
        # the same DOM, its links parsed (Chromium serialises the SVG attributes)
        import html.parser

        class P(html.parser.HTMLParser):
            links = []

            def handle_starttag(self, tag, attrs):
                d = dict(attrs)
                if tag == 'line' and 'link' in d.get('class', '').split():
                    self.links.append({'link': d.get('data-link'), 'from': d.get('data-from'),
                                       'to': d.get('data-to'), 'state': d.get('data-state'),
                                       'stroke': d.get('stroke')})

        p = P()
        p.feed(run_once(a.url, ['--dump-dom'], a.wait))
        print(json.dumps(p.links))
    elif a.mode == 'shot':
        if not a.out:
            sys.exit('shot: expected a PNG path')
        run_once(a.url, ['--screenshot=' + os.path.abspath(a.out)], a.wait)
        if not os.path.exists(a.out) or not os.path.getsize(a.out):
            sys.exit('shot: no screenshot in %s' % a.out)
    else:
        if not (a.link and getattr(a, 'from') and a.to and a.then):
            sys.exit('watch: expected --link, --from, --to and --then')
        sys.exit(watch(a))


if __name__ == '__main__':
    main()
