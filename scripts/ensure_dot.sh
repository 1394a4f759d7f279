#!/usr/bin/env bash
# Make sure Graphviz's `dot` is on PATH and can render.
# As root on Debian/Ubuntu it installs the `graphviz` package with apt-get;
# otherwise it stops and names the command to run.
set -euo pipefail

dot_works() {
    command -v dot >/dev/null 2>&1 &&
        printf 'digraph { a -> b }\n' | dot -Tsvg >/dev/null 2>&1
}

# apt/dpkg may be held by another process (e.g. an unattended install);
# wait for the lock instead of failing, and retry a few times.
apt_retry() {
    local attempt
    for attempt in 1 2 3 4 5 6; do
        if apt-get -o DPkg::Lock::Timeout=300 "$@"; then
            return 0
        fi
        echo "ensure_dot: 'apt-get $*' failed (attempt $attempt); retrying in 10 s" >&2
        sleep 10
    done
    return 1
}

if dot_works; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure_dot: Graphviz 'dot' not usable; installing graphviz with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt_retry update -q
    apt_retry install -y -q graphviz
    if dot_works; then
        exit 0
    fi
    echo "ensure_dot: graphviz was installed but 'dot' still does not render; check 'dot -V'" >&2
    exit 1
fi

if command -v dot >/dev/null 2>&1; then
    echo "ensure_dot: 'dot' is on PATH but failed to render a test graph; check your Graphviz install ('dot -V')." >&2
else
    echo "ensure_dot: Graphviz 'dot' was not found on PATH." >&2
fi
echo "Install Graphviz, then re-run make:" >&2
echo "    sudo apt-get install graphviz    # Debian/Ubuntu" >&2
echo "    brew install graphviz            # macOS" >&2
exit 1
