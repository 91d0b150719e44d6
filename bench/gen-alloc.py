#!/usr/bin/env python3
"""Allocation snapshots for bench/alloc-bench.sh: NODES nodes with DEVICES GPUs each (one
ResourceSlice per node, attributes model/index/pcieRoot, 80Gi of memory), 30 % of the GPUs
held by other claims, and one pod.

  gen-alloc.py plain NODES DEVICES        a claim for two GPUs
  gen-alloc.py constrained NODES DEVICES  two GPUs on one PCIe root (each root has one free
                                          GPU on most nodes: the search tries every pair)
  gen-alloc.py partitionable NODES DEVICES  each node's GPUs are partitions sharing one
                                          counter set (160Gi, 40Gi each), a claim for three
"""
import json
import random
import sys


def main():
    shape, nodes, devs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rnd = random.Random(7)
    snap = {"name": "%s-%dx%d" % (shape, nodes, devs), "nodes": [], "slices": [],
            "classes": [{"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {
                "expression": "device.driver == 'gpu.example.com' && "
                              "device.attributes['gpu.example.com'].model == 'a100'"}}]}}],
            "claims": []}
    held = []
    for i in range(nodes):
        node = "node-%04d" % i
        snap["nodes"].append({"metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
        devices = []
        for k in range(devs):
            d = {"name": "gpu-%d" % k, "attributes": {
                "model": {"string": "a100"}, "index": {"int": k},
                "pcieRoot": {"string": "pci-%d" % (k // 2 if shape != "constrained" else k % (devs // 2))}},
                "capacity": {"memory": {"value": "80Gi"}}}
            if shape == "partitionable":
                d["consumesCounters"] = [{"counterSet": "gpu-mem", "counters": {"memory": {"value": "40Gi"}}}]
            devices.append(d)
            if rnd.random() < 0.3:
                held.append({"request": "r", "driver": "gpu.example.com", "pool": node, "device": d["name"]})
        count = 2 if shape == "partitionable" else 1
        spec = {"driver": "gpu.example.com", "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": count}, "devices": devices}
        snap["slices"].append({"metadata": {"name": node + "-gpus"}, "spec": spec})
        if shape == "partitionable":
            snap["slices"].append({"metadata": {"name": node + "-counters"}, "spec": {
                "driver": "gpu.example.com", "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "gpu-mem", "counters": {"memory": {"value": "160Gi"}}}]}})
    for j in range(0, len(held), 4):
        snap["claims"].append({"metadata": {"name": "held-%d" % j, "namespace": "default"},
                               "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
                               "status": {"allocation": {"devices": {"results": held[j:j + 4]}}}})
    devices = {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu",
                                                       "count": 3 if shape == "partitionable" else 2}}]}
    if shape == "constrained":
        devices["constraints"] = [{"matchAttribute": "gpu.example.com/pcieRoot"}]
    snap["claims"].append({"metadata": {"name": "job", "namespace": "default"}, "spec": {"devices": devices}})
    snap["pod"] = {"metadata": {"name": "job", "namespace": "default"},
                   "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimName": "job"}]}}
    json.dump(snap, sys.stdout)


if __name__ == "__main__":
    main()
