#!/bin/bash
# `dra-doctor lint` as the CI action (action.yml) runs it: over the manifests a push or pull
# request changed (or all of PATHS), SARIF for code scanning into $SARIF_FILE, GitHub
# annotations on stdout, and the exit status of lint in $GITHUB_OUTPUT (status=) rather
# than as this script's, so that the SARIF upload step runs on failures too.
#
# Environment (action.yml maps its inputs here):
#   DD_PATHS         files or directories, space-separated (default .)
#   DD_CHANGED_ONLY  true: only the YAML/JSON files under DD_PATHS that changed since
#                    DD_BASE (default true)
#   DD_BASE          the git revision to compare with (default: the pull request's base
#                    branch, $GITHUB_BASE_REF, else the previous commit)
#   DD_FAIL_ON       error (default), warning or never
#   DD_ARGS          more lint arguments (--kube-version 1.35, --known-driver X, ...)
#   DD_COMMAND       the dra-doctor to run (default: dra-doctor on PATH, else the image
#                    ghcr.io/dra-doctor/dra-doctor:$DD_VERSION through docker)
#   SARIF_FILE       where the SARIF goes (default dra-doctor.sarif)
#   GITHUB_OUTPUT    the step's outputs file (status=, sarif=, files=)
set -u
paths=${DD_PATHS:-.}
fail_on=${DD_FAIL_ON:-error}
sarif=${SARIF_FILE:-dra-doctor.sarif}
out=${GITHUB_OUTPUT:-/dev/null}

if [ -n "${DD_COMMAND:-}" ]; then
    read -ra cmd <<< "$DD_COMMAND"
elif command -v dra-doctor >/dev/null 2>&1; then
    cmd=(dra-doctor)
else
    cmd=(docker run --rm -i -v "$PWD:$PWD:ro" -w "$PWD" "ghcr.io/dra-doctor/dra-doctor:${DD_VERSION:?no dra-doctor on PATH and no DD_VERSION for its image}")
fi

files=()
if [ "${DD_CHANGED_ONLY:-true}" = true ]; then
    base=${DD_BASE:-}
    if [ -z "$base" ] && [ -n "${GITHUB_BASE_REF:-}" ]; then
        git fetch --quiet --depth=1 origin "$GITHUB_BASE_REF" 2>/dev/null || true
        base=origin/$GITHUB_BASE_REF
    fi
    [ -n "$base" ] || base=HEAD~1
    if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
        echo "::error::dra-doctor: cannot compare with $base (fetch it: actions/checkout with fetch-depth: 0)"
        echo "status=2" >> "$out"
        exit 0
    fi
    # shellcheck disable=SC2086
    while IFS= read -r f; do
        [ -f "$f" ] && files+=("$f")
    done < <(git diff --name-only --diff-filter=ACMR "$base" -- $paths |
             grep -E '\.(ya?ml|json)$')
    if [ ${#files[@]} -eq 0 ]; then
        echo "dra-doctor: no manifest changed since $base"
        printf 'status=0\nsarif=\nfiles=0\n' >> "$out"
        exit 0
    fi
else
    read -ra files <<< "$paths"
fi
read -ra extra <<< "${DD_ARGS:-}"

"${cmd[@]}" lint -o sarif --fail-on "$fail_on" "${extra[@]}" "${files[@]}" > "$sarif"
status=$?
# The same findings as annotations on the pull request's lines.
"${cmd[@]}" lint -o github --fail-on never "${extra[@]}" "${files[@]}"
printf 'status=%s\nsarif=%s\nfiles=%s\n' "$status" "$sarif" "${#files[@]}" >> "$out"
echo "dra-doctor: lint of ${#files[@]} path(s) exited $status (SARIF in $sarif)"
exit 0
