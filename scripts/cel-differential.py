#!/usr/bin/env python3
"""The differential test: every CEL case this repository states (tests/data/cel/cases.json,
which tests/unit/test_cel_eval.c runs through lib/cel) through Kubernetes' own CEL code, the
oracle e2e/peers/celoracle (k8s.io/dynamic-resource-allocation at the e2e's Kubernetes
version).  A case passes when the oracle's outcome is the stated one and its message holds
the stated detail, so lib/cel and Kubernetes agree on every case.

`make conformance` runs the corpus of ../shared through lint; tests/fuzz/fuzz_cel_diff.c
compares generated selectors with the same oracle.

Prints "N passed, N failed"; exit 1 on any failure.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def oracle():
    try:
        out = subprocess.run([os.path.join(ROOT, "e2e/peers/build-celoracle.sh")],
                             capture_output=True, text=True, check=True)
    except subprocess.CalledProcessError as e:
        sys.stderr.write(e.stderr)
        sys.exit("cel-differential: the oracle cannot be built")
    return out.stdout.strip().splitlines()[-1]


def ask(bin_, reqs):
    inp = "".join(json.dumps(r) + "\n" for r in reqs)
    r = subprocess.run([bin_], input=inp, capture_output=True, text=True, check=True)
    return [json.loads(l) for l in r.stdout.splitlines()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", help="the oracle binary (default: build it)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    bin_ = a.oracle or oracle()
    with open(os.path.join(ROOT, "tests/data/cel/cases.json"), encoding="utf-8") as f:
        doc = json.load(f)
    cases = doc["cases"]
    reqs = [{"expression": c["expression"], "device": doc["devices"][c["device"]],
             "gates": c.get("gates", {})} for c in cases]
    passed = failed = 0
    for c, o in zip(cases, ask(bin_, reqs)):
        ok = o["outcome"] == c["expect"] and c.get("detail", "") in o["detail"]
        if ok:
            passed += 1
            continue
        failed += 1
        print("DIFF %r: stated %s %r, Kubernetes says %s %r" % (
            c["expression"], c["expect"], c.get("detail", ""), o["outcome"], o["detail"][:200]))
    print("cel-differential: %d passed, %d failed" % (passed, failed))
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    with open(os.path.join(ROOT, "build", "test-counts"), "a") as f:
        f.write("%d %d\n" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
