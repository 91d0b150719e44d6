#!/usr/bin/env bash
# Lint throughput benchmark (`make bench`).
#
# Generates (once, cached outside the repository) a GitOps-like repository of
# at least 50,000 Kubernetes objects with bench/gen-repo.py (BENCH_SHAPE=platform:
# bench/gen-platform.py, one platform team's claims-heavy repository), then times
#   /usr/bin/time -v taskset -c 0 ./dra-doctor lint <repo> -o json --fail-on never
# BENCH_RUNS times and reports the median wall time, objects per second and
# peak RSS.  If kubeconform can be built from its Go module
# (e2e/peers/build-kubeconform.sh), it is run on the same files in the same
# way (-n 1, one worker, pinned to the same core, offline schemas generated
# from the Kubernetes OpenAPI spec) and the throughput ratio is printed.
#
# Exits non-zero only on a harness error (missing tools, dra-doctor failing or
# printing unreadable JSON); a missed throughput goal prints "goal missed" and
# still exits 0.
#
# Env: BENCH_COUNT (50000)  BENCH_SEED (1)  BENCH_RUNS (3)  BENCH_CPU (0)  BENCH_SHAPE (repo)
#      BENCH_GOAL (50000 objects/s)  BENCH_PEERS (1; 0 skips kubeconform)
#      DD_BIN (./dra-doctor)  DD_CACHE_DIR (${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor)
#      BENCH_MD=FILE also writes the results table as Markdown to FILE.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

count=${BENCH_COUNT:-50000}
shape=${BENCH_SHAPE:-repo}
seed=${BENCH_SEED:-1}
runs=${BENCH_RUNS:-3}
cpu=${BENCH_CPU:-0}
goal=${BENCH_GOAL:-50000}
peers=${BENCH_PEERS:-1}
cache=${DD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dra-doctor}
export DD_CACHE_DIR=$cache

die() { echo "lint-bench: $*" >&2; exit 2; }

for t in python3 taskset; do
    command -v "$t" >/dev/null 2>&1 || die "$t is required"
done
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) is required: apt-get install time"
case $runs in ''|*[!0-9]*|0) die "BENCH_RUNS must be a positive integer";; esac
case $shape in repo|platform) ;; *) die "BENCH_SHAPE must be repo or platform";; esac
gen=bench/gen-$shape.py

dd=${DD_BIN:-./dra-doctor}
if [ ! -x "$dd" ] && [ -z "${DD_BIN:-}" ]; then
    echo "lint-bench: ./dra-doctor is missing; running make" >&2
    make --no-print-directory dra-doctor >&2 || die "make failed"
fi
[ -x "$dd" ] || die "$dd is missing"
"$dd" lint --help >/dev/null 2>&1 || die "$dd has no working 'lint' command"

# ---- the generated repository (cached) --------------------------------------
# Keyed by the generator's content too, so that changing it regenerates.
gensum=$(cat "$gen" bench/gen-repo.py | sha256sum | cut -c1-12)
repo="$cache/bench-$shape-$count-$seed-$gensum"
manifest="$repo.manifest.json"
if [ ! -f "$manifest" ] || [ ! -d "$repo" ]; then
    mkdir -p "$cache"
    # Drop corpora of the same count and seed made by older generators.
    for old in "$cache/bench-$shape-$count-$seed-"*; do
        case $old in "$repo"*) ;; *) rm -rf "$old";; esac
    done
    rm -rf "$repo.tmp" "$repo"
    echo "lint-bench: generating $repo" >&2
    python3 "$gen" "$repo.tmp" "$count" "$seed" --manifest "$repo.tmp.manifest.json" >&2 ||
        die "$gen failed"
    mv "$repo.tmp" "$repo"
    mv "$repo.tmp.manifest.json" "$manifest"
fi
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
gen_objects=$(jget "$manifest" objects)
gen_files=$(jget "$manifest" files)
gen_bytes=$(jget "$manifest" bytes)

# Warm the page cache so that every run (and every tool) reads from memory.
find "$repo" -type f -print0 | xargs -0 cat >/dev/null

load0=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# time_run NAME I CMD... : runs CMD under GNU time pinned to $cpu; writes
# $work/NAME.I.{out,err,time,rc}.
time_run() {
    local name=$1 i=$2; shift 2
    local rc=0
    /usr/bin/time -v -o "$work/$name.$i.time" taskset -c "$cpu" "$@" \
        >"$work/$name.$i.out" 2>"$work/$name.$i.err" || rc=$?
    echo "$rc" >"$work/$name.$i.rc"
}

# stats NAME : prints "median_wall max_rss_kib median_user median_sys" over the runs.
stats() {
    python3 - "$work" "$1" "$2" <<'EOF'
import re, statistics, sys
work, name, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
walls, rss, user, sys_ = [], [], [], []
for i in range(1, runs + 1):
    t = open("%s/%s.%d.time" % (work, name, i)).read()
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", t)
    walls.append(int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3)))
    rss.append(int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)))
    user.append(float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1)))
    sys_.append(float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1)))
print("%.3f %d %.3f %.3f %s" % (statistics.median(walls), max(rss), statistics.median(user),
                                statistics.median(sys_), ",".join("%.3f" % w for w in walls)))
EOF
}

# ---- dra-doctor -------------------------------------------------------------
dd_cmd=("$dd" lint "$repo" -o json --fail-on never)
echo "lint-bench: dra-doctor, $runs runs on CPU $cpu: ${dd_cmd[*]}" >&2
for i in $(seq 1 "$runs"); do
    time_run dd "$i" "${dd_cmd[@]}"
    rc=$(cat "$work/dd.$i.rc")
    if [ "$rc" != 0 ]; then
        sed -n '1,20p' "$work/dd.$i.err" >&2
        die "dra-doctor lint exited $rc (with --fail-on never it must exit 0)"
    fi
done
read -r dd_summary < <(python3 - "$work/dd.1.out" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    s = d["summary"]
    print(s["objects"], s["errors"], s["warnings"], s["infos"])
except Exception as e:  # unreadable output is a harness error
    print("ERROR %s" % e)
EOF
) || true
case $dd_summary in ERROR*|'') die "cannot read the JSON summary of dra-doctor lint: ${dd_summary#ERROR }";; esac
read -r dd_objects dd_errors dd_warnings dd_infos <<<"$dd_summary"
read -r dd_wall dd_rss dd_user dd_sys dd_walls <<<"$(stats dd "$runs")"
dd_version=$("$dd" --version 2>/dev/null | head -n1 | awk '{print $NF}') || true
[ -n "$dd_version" ] || dd_version=$(cat VERSION 2>/dev/null || echo "?")
[ "$dd_objects" = "$gen_objects" ] ||
    echo "lint-bench: note: dra-doctor counted $dd_objects objects, the generator wrote $gen_objects" >&2

# ---- kubeconform (optional) -------------------------------------------------
kc_status="not run"
kc_line=""
kc_cmd=()
if [ "$peers" = 1 ]; then
    if kc_env=$(e2e/peers/build-kubeconform.sh 2>"$work/kc-build.err"); then
        eval "$kc_env"
        kc_cmd=("$KUBECONFORM" -n 1 -summary -schema-location "$KUBECONFORM_SCHEMAS"
                -kubernetes-version "$K8S_VERSION" "$repo")
        echo "lint-bench: kubeconform $KUBECONFORM_VERSION, $runs runs on CPU $cpu: ${kc_cmd[*]}" >&2
        for i in $(seq 1 "$runs"); do
            time_run kc "$i" "${kc_cmd[@]}"
        done
        # kubeconform exits 1 when a resource is invalid; only a missing
        # summary is a failure of the run itself.
        kc_line=$(grep -h '^Summary:' "$work/kc.1.out" "$work/kc.1.err" | tail -n1 || true)
        if [ -z "$kc_line" ]; then
            sed -n '1,20p' "$work/kc.1.out" "$work/kc.1.err" >&2
            kc_status="failed: no summary line (exit $(cat "$work/kc.1.rc"))"
        else
            kc_objects=$(sed -E 's/^Summary: ([0-9]+) resources? found.*/\1/' <<<"$kc_line")
            read -r kc_wall kc_rss kc_user kc_sys kc_walls <<<"$(stats kc "$runs")"
            kc_status=ok
        fi
    else
        kc_status="not built: $(tail -n3 "$work/kc-build.err" | tr '\n' ' ')"
    fi
else
    kc_status="skipped (BENCH_PEERS=0)"
fi

# ---- report -----------------------------------------------------------------
python3 - "$gen_objects" "$gen_files" "$gen_bytes" "$seed" "$runs" "$cpu" "$goal" \
    "$dd_version" "$dd_objects" "$dd_wall" "$dd_rss" "$dd_user" "$dd_sys" "$dd_walls" \
    "$dd_errors" "$dd_warnings" "$dd_infos" \
    "$kc_status" "${KUBECONFORM_VERSION:-}" "${kc_objects:-0}" "${kc_wall:-0}" "${kc_rss:-0}" \
    "${kc_user:-0}" "${kc_sys:-0}" "${kc_walls:-}" "$kc_line" "${BENCH_MD:-}" \
    "taskset -c $cpu ${dd_cmd[*]}" "${kc_cmd:+taskset -c $cpu ${kc_cmd[*]}}" "$load0" "$gen" <<'EOF'
import sys
a = sys.argv[1:]
(gen_objects, gen_files, gen_bytes, seed, runs, cpu, goal,
 dd_version, dd_objects, dd_wall, dd_rss, dd_user, dd_sys, dd_walls, dd_err, dd_warn, dd_info,
 kc_status, kc_version, kc_objects, kc_wall, kc_rss, kc_user, kc_sys, kc_walls, kc_line, md,
 dd_cmd, kc_cmd, load0, gen) = a
gen_objects, gen_files, gen_bytes = int(gen_objects), int(gen_files), int(gen_bytes)
goal = float(goal)
loadavg = load0

def rate(objs, wall):
    return int(objs) / float(wall) if float(wall) > 0 else float("inf")

rows = []
dd_rate = rate(dd_objects, dd_wall)
rows.append(("dra-doctor " + dd_version, int(dd_objects), float(dd_wall), dd_rate, int(dd_rss) / 1024.0,
             float(dd_user), float(dd_sys), dd_walls))
kc_rate = None
if kc_status == "ok":
    kc_rate = rate(kc_objects, kc_wall)
    rows.append(("kubeconform " + kc_version, int(kc_objects), float(kc_wall), kc_rate, int(kc_rss) / 1024.0,
                 float(kc_user), float(kc_sys), kc_walls))

hdr = ("tool", "objects", "wall s (median)", "objects/s", "peak RSS MiB", "user s", "sys s",
       "objects/CPU-s", "wall s per run")
table = [hdr] + [(r[0], "%d" % r[1], "%.3f" % r[2], "{:,.0f}".format(r[3]), "%.1f" % r[4],
                  "%.3f" % r[5], "%.3f" % r[6], "{:,.0f}".format(rate(r[1], r[5] + r[6])),
                  r[7].replace(",", " ")) for r in rows]
widths = [max(len(row[i]) for row in table) for i in range(len(hdr))]
def line(row):
    return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) + " |"
sep = "|" + "|".join("-" * (w + 1) + ("-" if i == 0 else ":") for i, w in enumerate(widths)) + "|"
out = []
out.append("Repository: %d objects in %d files, %.1f MiB (%s, seed %s); %s runs per tool, pinned to CPU %s"
           % (gen_objects, gen_files, gen_bytes / 1048576.0, gen, seed, runs, cpu))
out.append("Load average before the runs: %s (other work on the machine inflates wall time; "
           "objects/CPU-s = objects / (user + sys) is less sensitive to it)" % loadavg)
out.append("")
out.append(line(table[0]))
out.append(sep)
for row in table[1:]:
    out.append(line(row))
out.append("")
out.append("dra-doctor findings: %s errors, %s warnings, %s infos" % (dd_err, dd_warn, dd_info))
if kc_status == "ok":
    out.append("kubeconform: %s" % kc_line)
    out.append("ratio dra-doctor objects/s / kubeconform objects/s: %.1fx (by CPU time: %.1fx)" % (
        dd_rate / kc_rate,
        rate(dd_objects, float(dd_user) + float(dd_sys)) / rate(kc_objects, float(kc_user) + float(kc_sys))))
else:
    out.append("kubeconform: %s" % kc_status)
out.append("")
out.append("commands (each under /usr/bin/time -v):")
out.append("  " + dd_cmd)
if kc_status == "ok":
    out.append("  " + kc_cmd)
out.append("goal (>= {:,.0f} objects/s on one core): {}".format(goal, "goal met" if dd_rate >= goal else "goal missed"))
text = "\n".join(out)
print(text)
if md:
    with open(md, "w") as f:
        f.write(text + "\n")
EOF
