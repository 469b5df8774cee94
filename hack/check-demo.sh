#!/usr/bin/env bash
# Checks what `make demo` needs that `make tools` cannot build, before the (long) tool
# build starts: a Valkey (or Redis) server.
set -euo pipefail
if [[ -n "${BALLAST_VALKEY_SERVER:-}" ]]; then
	if [[ -x "${BALLAST_VALKEY_SERVER}" ]]; then exit 0; fi
	echo "make demo: BALLAST_VALKEY_SERVER=${BALLAST_VALKEY_SERVER} is not an executable file" >&2
	exit 1
fi
if command -v valkey-server >/dev/null 2>&1 || command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
echo "make demo needs valkey-server (or redis-server) on PATH, or BALLAST_VALKEY_SERVER set." >&2
echo "Install it with hack/install-deps.sh, then run make demo again." >&2
exit 1
