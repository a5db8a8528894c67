#!/usr/bin/env bash
# The malloc_trim addon (src/memory/malloc-trim.c) with a C compiler at hand:
# build.mjs compiles it beside the bundle, and its tests must run, not skip as
# they do on the bare machine, where the compiler is hidden.
set -euo pipefail
. "$(dirname "$0")/debian-packages.sh"
cd "$(dirname "$0")/.."
# gcc only recommends the C library's headers, and these installs skip recommends.
ensure_debian_packages gcc libc6-dev
node build.mjs
IOGATE_REQUIRE_NATIVE=1 node --import tsx --test --test-timeout=120000 --test-reporter=spec test/unit/build/malloc-trim.test.ts
