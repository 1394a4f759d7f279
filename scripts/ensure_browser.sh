#!/usr/bin/env bash
# Make sure a headless browser exists for the HTML view's test (tests/test_render_html.py).
# As root on Debian/Ubuntu it installs Debian's `chromium` with apt-get. Never fatal: without a
# browser that test skips, saying why; every other test runs.
set -uo pipefail

if [ -x /usr/bin/chromium ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure_browser: /usr/bin/chromium missing; installing chromium with apt-get (for the HTML view's test)" >&2
    export DEBIAN_FRONTEND=noninteractive
    if apt-get -o DPkg::Lock::Timeout=300 install -y -q chromium ||
       { apt-get -o DPkg::Lock::Timeout=300 update -q && apt-get -o DPkg::Lock::Timeout=300 install -y -q chromium; }; then
        [ -x /usr/bin/chromium ] && exit 0
    fi
    echo "ensure_browser: could not install chromium; the HTML view's browser test will be skipped" >&2
    exit 0
fi

echo "ensure_browser: no /usr/bin/chromium; the HTML view's browser test will be skipped" >&2
echo "    (to run it: sudo apt-get install chromium)" >&2
exit 0
