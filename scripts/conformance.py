#!/usr/bin/env python3
"""make conformance: the CEL selector conformance corpus through `dra-doctor lint`.

Each case of ../shared/corpus/cel/cases.json (schema in the file; data, never copied
into the repository) becomes one manifest: a DeviceClass with the expression, a
ResourceSlice holding the device, a ResourceClaim for exactly one device of the
class, a Pod using it and a Node (lint's allocator judges the pod on it).  The outcome is read from
lint's findings:

    SelectorSyntaxError                           -> compile_error (API server rejects)
    SelectorRuntimeError, SelectorUnknownAttribute -> runtime_error (scheduler aborts)
    SelectorMatchesNoDriver, DevicesDoNotFit  -> false (device does not match)
    none of these                                 -> true

The JSON is written with ASCII escapes, as kubectl would send it, so an expression
holding a non-BMP character reaches the reader as a surrogate pair.

Prints every failure with -v, and closes with "N passed, N failed".
Exit status: 0 when every case ran passed, 1 otherwise, 0 with a message when the
corpus is absent.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus", "cel", "cases.json")


def manifest(case):
    dev = case["device"]
    d = {"name": "dev-0"}
    for k in ("attributes", "capacity", "allowMultipleAllocations"):
        if k in dev:
            d[k] = dev[k]
    return {"apiVersion": "v1", "kind": "List", "items": [
        # One Node for the allocator to judge the pod on (lint assumes none for allNodes).
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "conformance-node"}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
         "metadata": {"name": "conformance"},
         "spec": {"selectors": [{"cel": {"expression": case["expression"]}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": {"name": "conformance-slice"},
         "spec": {"driver": dev["driver"], "allNodes": True,
                  "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
                  "devices": [d]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "conformance-claim", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "req", "exactly": {
             "deviceClassName": "conformance", "allocationMode": "ExactCount", "count": 1}}]}}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "conformance-pod", "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                  "resources": {"claims": [{"name": "dev"}]}}],
                  "resourceClaims": [{"name": "dev", "resourceClaimName": "conformance-claim"}]}},
    ]}


def outcome(binary, extra, case, tmpdir):
    path = os.path.join(tmpdir, "case-%d.json" % case["_n"])
    with open(path, "w", encoding="ascii") as f:
        json.dump(manifest(case), f, ensure_ascii=True)
    try:
        r = subprocess.run([binary, "lint", "-o", "json", "--fail-on", "never",
                            "--known-driver", case["device"]["driver"]] + extra + [path],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    finally:
        os.unlink(path)
    if r.returncode < 0:
        return "crash", "signal %d" % -r.returncode
    try:
        findings = json.loads(r.stdout)["findings"]
    except (ValueError, KeyError):
        return "unreadable", (r.stderr.strip().splitlines() or [""])[0]
    if r.returncode == 2:
        return "unreadable", (r.stderr.strip().splitlines() or [""])[0]
    codes = {f["code"]: f["message"] for f in findings}
    for code, out in (("SelectorSyntaxError", "compile_error"),
                      ("SelectorRuntimeError", "runtime_error"),
                      ("SelectorUnknownAttribute", "runtime_error"),
                      ("SelectorMatchesNoDriver", "false"),
                      ("DevicesDoNotFit", "false")):
        if code in codes:
            return out, codes[code]
    return "true", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "dra-doctor"))
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--gates", action="store_true",
                    help="also run the cases that require feature gates, with those gates on")
    ap.add_argument("--all", action="store_true",
                    help="run every case with default gates, as the issue's count did")
    ap.add_argument("--kube-version", help="passed to lint")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    ap.add_argument("--only", help="run only cases whose id contains this text")
    a = ap.parse_args()
    if not os.path.exists(a.corpus):
        print("conformance: %s is absent; skipped" % os.path.normpath(a.corpus))
        return 0
    with open(a.corpus, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    run = []
    for n, c in enumerate(cases):
        c["_n"] = n
        if a.only and a.only not in c["id"]:
            continue
        if c.get("requires") and not a.gates and not a.all:
            continue
        run.append(c)
    skipped = len(cases) - len(run)
    passed = failed = 0
    causes = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="dd-conformance-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        def one(c):
            extra = []
            if a.kube_version:
                extra += ["--kube-version", a.kube_version]
            if c.get("requires") and a.gates:
                extra += ["--feature-gates", ",".join(g + "=true" for g in c["requires"])]
            return c, outcome(a.binary, extra, c, tmp)
        for c, (got, why) in ex.map(one, run):
            if got == c["expect"]:
                passed += 1
                continue
            failed += 1
            causes["expected %s, got %s" % (c["expect"], got)] += 1
            if a.verbose:
                print("FAIL %s: expected %s (%s), got %s (%s)\n     %s" % (
                    c["id"], c["expect"], c["expect_detail"][:160], got, why[:200],
                    c["expression"][:300].replace("\n", " ")))
    for k, v in causes.most_common():
        print("  %5d  %s" % (v, k))
    if skipped:
        print("conformance: %d case(s) skipped (need feature gates: --gates)" % skipped
              if not a.only else "conformance: %d case(s) not selected" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
