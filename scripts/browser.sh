#!/usr/bin/env bash
# The inbox in a real browser (issue 7, "Browser tests"): Playwright (npm
# `playwright-core`, no browser download of its own) driving Debian's
# `chromium` headless against the real `askgate gateway`, with the
# TypeScript MCP SDK as the client whose tool call waits on the inbox.
#
# interop/browser/inbox.mjs checks, each by name:
# - sign-in:       the operator signs in with the page's form
# - listed-live:   a tool call through the gateway parks an ask, and the
#                  inbox page, open before the call, lists it without a reload
# - inline-error:  a wrong value shows its error beside the field; the ask
#                  stays pending
# - csrf-missing, csrf-wrong, csrf-wrong-form: a post without this session's
#                  CSRF token, or with another (by request, and by the page's
#                  own form), is refused (403) and changes nothing
# - form-settles:  the richer form (integer, choice by hotkey, time range)
#                  answered right in the page settles it, via web
# - link-settles:  the signed link the client got opens the ask in a browser
#                  that is not signed in; accepting settles it and the waiting
#                  MCP call completes (the note is written)
# - link-reused:   the same link opened again is refused (410)
# - sign-out, no-script-errors
#
# interop/browser/pages.mjs checks the pages as a person sees them: axe-core
# (npm) finds 0 serious or critical violations in light, dark and on a
# phone (screenshots of each; settled pages too), nothing is wider than 320
# px, a confirmation is one decision ("Run TOOL" / "Don't run", or its key
# y / n), a form is answered with the
# keyboard alone, its pre-filled defaults (an instant in its zone) sent
# unchanged.
#
# interop/browser/oidc.mjs then signs people in with an OpenID provider
# (npm oidc-provider, oidc_provider.mjs, on 127.0.0.2): an outsider
# refused, ana and bo through the provider's real sign-in, a quorum of two
# of their group approving one call, the provider's redirect not reusable.
# Screenshots go to target/browser/out/ (FAIL-NAME.png for a failed check).
#
# A check listed in interop/browser/expected-failures.txt (a known inbox
# bug) must fail: it is reported as "known" and does not fail the run; when
# it passes, the run fails until it is taken off the list.
#
#   scripts/browser.sh
#
# Packages are pinned below and installed once into target/browser/node (a
# stamp file per pin); later runs reuse them. Chromium is Debian's: when
# /usr/bin/chromium is missing it is installed with apt-get (as root). When
# node, npm or chromium cannot be had the script skips, unless CI is set
# (then it fails).
set -euo pipefail

PLAYWRIGHT_CORE=1.65.1
TS_SDK=1.32.2
AXE_CORE=4.14.1
OIDC_PROVIDER=9.13.3
CHROMIUM=/usr/bin/chromium

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-"$root/target"}
out=${BROWSER_OUT:-"$root/target/browser"}
shots="$out/out"
logs="$out/logs"

# Not able to run here: fail under CI, skip otherwise.
unable() {
    if [ -n "${CI:-}" ]; then
        echo "browser: $*, and CI must run the browser tests" >&2
        exit 1
    fi
    echo "browser: SKIPPED — $*" >&2
    exit 0
}

missing=()
command -v node >/dev/null 2>&1 || missing+=(node)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
    unable "${missing[*]} not installed"
fi

mkdir -p "$out"
rm -rf "$logs" "$shots"
mkdir -p "$logs" "$shots"
started=$(date +%s)

# Chromium: Debian's package. Its recommends (desktop daemons, GL drivers)
# are left out: headless needs none of them; fonts-liberation is kept so
# screenshots show text as a person would see it.
if [ ! -x "$CHROMIUM" ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        unable "$CHROMIUM is missing and apt-get cannot install it here (not root, or no apt-get)"
    fi
    echo "browser: installing Debian's chromium with apt-get (log: $out/apt.log)" >&2
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium fonts-liberation; } >"$out/apt.log" 2>&1; then
        tail -5 "$out/apt.log" >&2
        unable "apt-get could not install chromium (see $out/apt.log)"
    fi
    [ -x "$CHROMIUM" ] || unable "apt-get installed chromium, but $CHROMIUM is not there"
fi

# Node: playwright-core (the library only: it downloads no browser) and the
# MCP SDK, in a prefix of their own, installed once per pin.
node_prefix="$out/node"
node_stamp="$node_prefix/.askgate-playwright-core-$PLAYWRIGHT_CORE-sdk-$TS_SDK-axe-$AXE_CORE"
if [ ! -f "$node_stamp" ]; then
    echo "browser: installing playwright-core@$PLAYWRIGHT_CORE, @modelcontextprotocol/sdk@$TS_SDK and axe-core@$AXE_CORE into $node_prefix" >&2
    rm -rf "$node_prefix"
    mkdir -p "$node_prefix"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$node_prefix" --save-exact --no-audit --no-fund --silent \
        "playwright-core@$PLAYWRIGHT_CORE" \
        "@modelcontextprotocol/sdk@$TS_SDK" \
        "axe-core@$AXE_CORE"
    touch "$node_stamp"
fi
# npm oidc-provider, for the OIDC checks: in a prefix of its own (it
# pins its own dependencies), installed once per pin.
oidc_prefix="$out/oidc"
if [ ! -f "$oidc_prefix/.askgate-oidc-provider-$OIDC_PROVIDER" ]; then
    echo "browser: installing oidc-provider@$OIDC_PROVIDER into $oidc_prefix" >&2
    rm -rf "$oidc_prefix"
    mkdir -p "$oidc_prefix"
    npm install --prefix "$oidc_prefix" --save-exact --no-audit --no-fund --silent "oidc-provider@$OIDC_PROVIDER"
    touch "$oidc_prefix/.askgate-oidc-provider-$OIDC_PROVIDER"
fi
installed=$(date +%s)

cargo build --quiet -p askgate -p askgate-conformance --bins
built=$(date +%s)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/askgate-browser.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

status=0
node interop/browser/inbox.mjs \
    --askgate "$target/debug/askgate" \
    --upstream "$target/debug/askgate-example-upstream" \
    --chromium "$CHROMIUM" \
    --modules "$node_prefix/node_modules" \
    --scratch "$scratch" \
    --shots "$shots" \
    --logs "$logs" || status=$?

node interop/browser/pages.mjs \
    --askgate "$target/debug/askgate" \
    --chromium "$CHROMIUM" \
    --modules "$node_prefix/node_modules" \
    --scratch "$scratch" \
    --shots "$shots" \
    --logs "$logs" || status=$?

node interop/browser/oidc.mjs \
    --askgate "$target/debug/askgate" \
    --upstream "$target/debug/askgate-example-upstream" \
    --chromium "$CHROMIUM" \
    --modules "$node_prefix/node_modules" \
    --oidc-modules "$oidc_prefix/node_modules" \
    --scratch "$scratch" \
    --shots "$shots" \
    --logs "$logs" || status=$?

finished=$(date +%s)
echo "browser: install $((installed - started))s, build $((built - installed))s, run $((finished - built))s (screenshots in $shots, logs in $logs)" >&2
exit "$status"
