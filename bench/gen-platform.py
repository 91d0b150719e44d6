#!/usr/bin/env python3
"""Generate a deterministic repository shaped like a platform team's, claims-heavy, for the
lint benchmark.

Usage: gen-platform.py OUT_DIR [COUNT [SEED]] [--manifest PATH]

  OUT_DIR   directory to create (must not exist, or be empty)
  COUNT     minimum number of Kubernetes objects (default 50000)
  SEED      random seed (default 1); same COUNT and SEED give the same bytes
  --manifest PATH   where to write the JSON summary (default OUT_DIR.manifest.json)

Where bench/gen-repo.py writes many teams' applications with a few DRA workloads among them,
this is one platform team's repository of 50 namespaces in which every Pod holds a
ResourceClaim of its own: per unit of five objects, a Pod, the ResourceClaim it names, a
Deployment (no devices), its ConfigMap and its Service.  One DRA driver (the example driver:
DaemonSet, ServiceAccount, ClusterRole and binding, two DeviceClasses) publishes a
ResourceSlice of 8 GPUs per node for 1.25 times the devices the claims ask for.  A tenth of
the claims select a GPU model, a twentieth list firstAvailable alternatives.

At 50,000 objects: 10,000 Pods, 10,000 ResourceClaims, 10,000 Deployments, 10,000
ConfigMaps, 10,000 Services (less what the driver and its slices take).  The content is
consistent: a correct linter reports nothing.

Standard library only; the YAML emitter is bench/gen-repo.py's.
"""
import importlib.util
import json
import os
import random
import sys
from collections import Counter

_spec = importlib.util.spec_from_file_location(
    "gen_repo", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen-repo.py"))
gen_repo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_repo)
to_yaml = gen_repo.to_yaml

NAMESPACES = 50
DRIVER = "gpu.example.com"
MODELS = ["LATEST-GPU-MODEL", "PREVIOUS-GPU-MODEL"]
CLASSES = [
    ("gpu.example.com", ["device.driver == 'gpu.example.com'"]),
    ("gpu-large.example.com", ["device.driver == 'gpu.example.com'",
                               "device.capacity['gpu.example.com'].memory.compareTo("
                               "quantity('40Gi')) >= 0"]),
]
APPS = ["api", "worker", "trainer", "inference", "embedder", "indexer", "gateway", "batch"]


class Out:
    def __init__(self, root):
        self.root = root
        self.kinds = Counter()
        self.files = 0
        self.bytes = 0
        self.objects = 0

    def write(self, rel, objs):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = "".join(("---\n" if i else "") + to_yaml(o) for i, o in enumerate(objs)).encode()
        with open(path, "wb") as f:
            f.write(data)
        for o in objs:
            self.kinds[o["kind"]] += 1
        self.objects += len(objs)
        self.files += 1
        self.bytes += len(data)


def meta(name, ns=None, labels=None):
    m = {"name": name}
    if ns:
        m["namespace"] = ns
    if labels:
        m["labels"] = labels
    return m


def driver(out, nodes, r):
    base = "platform/dra"
    out.write(base + "/classes.yaml", [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta(name),
         "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]}}
        for name, exprs in CLASSES])
    ns = "dra-example-driver"
    lab = {"app.kubernetes.io/name": "dra-example-driver"}
    out.write(base + "/driver.yaml", [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("dra-example-driver", ns)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": meta("dra-example-driver"),
         "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": meta("dra-example-driver"),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "dra-example-driver"},
         "subjects": [{"kind": "ServiceAccount", "name": "dra-example-driver", "namespace": ns}]},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("dra-example-driver-kubeletplugin", ns),
         "spec": {"selector": {"matchLabels": lab}, "template": {"metadata": {"labels": lab}, "spec": {
             "serviceAccountName": "dra-example-driver",
             "tolerations": [{"key": "gpu.example.com/present", "operator": "Exists", "effect": "NoSchedule"}],
             "containers": [{
                 "name": "plugin", "image": "registry.k8s.io/dra-example-driver/dra-example-driver:v0.2.0",
                 "command": ["dra-example-kubeletplugin"],
                 "env": [{"name": "CDI_ROOT", "value": "/var/run/cdi"}, {"name": "NUM_DEVICES", "value": "8"}],
                 "volumeMounts": [{"name": "plugins-registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
                                  {"name": "plugins", "mountPath": "/var/lib/kubelet/plugins"},
                                  {"name": "cdi", "mountPath": "/var/run/cdi"}]}],
             "volumes": [{"name": "plugins-registry", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}},
                         {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/plugins"}},
                         {"name": "cdi", "hostPath": {"path": "/var/run/cdi"}}]}}}},
    ])
    per_file = []
    for i in range(nodes):
        node = "gpu-node-%05d" % i
        gmodel = MODELS[i % 2]
        per_file.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": meta("%s-gpu.example.com" % node),
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-%d" % d, "attributes": {
                         "index": {"int": d},
                         "uuid": {"string": "gpu-%08x" % r.getrandbits(32)},
                         "model": {"string": gmodel},
                         "driverVersion": {"version": "1.0.0"}},
                         "capacity": {"memory": {"value": "80Gi" if gmodel == MODELS[0] else "40Gi"}}}
                         for d in range(8)]}})
        if len(per_file) == 100 or i == nodes - 1:
            out.write("%s/slices/slices-%05d.yaml" % (base, i // 100), per_file)
            per_file = []


def claim(name, ns, i, r):
    if i % 20 == 7:
        req = {"name": "gpu", "firstAvailable": [
            {"name": "large", "deviceClassName": "gpu-large.example.com"},
            {"name": "any", "deviceClassName": "gpu.example.com"}]}
    else:
        ex = {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}
        if i % 10 == 3:
            ex["selectors"] = [{"cel": {"expression":
                                        "device.attributes['gpu.example.com'].model == '%s'" % r.choice(MODELS)}}]
        req = {"name": "gpu", "exactly": ex}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta(name, ns),
            "spec": {"devices": {"requests": [req]}}}


def container(app, ns, r, claim_name=None):
    c = {"name": app, "image": "registry.example.com/%s/%s:v1.%d.%d" % (ns, app, r.randint(0, 30), r.randint(0, 9)),
         "args": ["--port=8080", "--config=/etc/%s/app.properties" % app],
         "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
         "env": [{"name": "LOG_LEVEL", "value": r.choice(["info", "debug"])},
                 {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
         "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}},
         "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 10},
         "volumeMounts": [{"name": "config", "mountPath": "/etc/%s" % app, "readOnly": True}]}
    if claim_name:
        c["resources"]["claims"] = [{"name": "gpu"}]
    return c


def unit(i, ns, r):
    app = "%s-%05d" % (APPS[i % len(APPS)], i)
    lab = {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": ns}
    cname = "%s-gpu" % app
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta(app + "-0", ns, lab),
           "spec": {"containers": [container(app, ns, r, cname)],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": cname}],
                    "tolerations": [{"key": "gpu.example.com/present", "operator": "Exists",
                                     "effect": "NoSchedule"}],
                    "volumes": [{"name": "config", "configMap": {"name": app + "-config"}}]}}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(app, ns, lab),
              "spec": {"replicas": r.choice([1, 2, 3]), "selector": {"matchLabels": lab},
                       "template": {"metadata": {"labels": lab},
                                    "spec": {"containers": [container(app, ns, r)],
                                             "volumes": [{"name": "config",
                                                          "configMap": {"name": app + "-config"}}]}}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(app + "-config", ns, lab),
          "data": {"app.properties": "".join("%s.%s=%d\n" % (app, k, r.randint(1, 5000))
                                             for k in ("timeout", "retries", "pool.size", "batch.size"))}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": meta(app, ns, lab),
           "spec": {"selector": lab, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}
    return [claim(cname, ns, i, r), pod, deploy, cm, svc]


def main(argv):
    parsed = gen_repo.parse_args(argv, __doc__, "gen-platform.py", 100)
    if isinstance(parsed, int):
        return parsed
    out_dir, count, seed, manifest = parsed
    r = random.Random(seed)
    out = Out(out_dir)

    # Units of five objects, less the driver's share: 1.25 devices per claim, 8 per slice.
    units = max(1, (count - 8 - NAMESPACES) * 64 // (5 * 64 + 10))
    nodes = (units * 5 // 4 + 7) // 8
    while 5 * units + nodes + 8 + NAMESPACES < count:
        units += 1
        nodes = (units * 5 // 4 + 7) // 8
    driver(out, nodes, r)
    per_ns = [[] for _ in range(NAMESPACES)]
    for u in range(units):
        per_ns[u % NAMESPACES].append(u)
    for n, us in enumerate(per_ns):
        ns = "team-%02d" % n
        docs = {"claims": [], "pods": [], "deployments": [], "configmaps": [], "services": []}
        for u in us:
            c, p, d, cm, s = unit(u, ns, r)
            docs["claims"].append(c)
            docs["pods"].append(p)
            docs["deployments"].append(d)
            docs["configmaps"].append(cm)
            docs["services"].append(s)
        out.write("platform/namespaces/%s/namespace.yaml" % ns,
                  [{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns)}])
        for kind, objs in docs.items():
            # Files of at most 500 objects, as a repository splits them.
            for k in range(0, len(objs), 500):
                out.write("platform/namespaces/%s/%s-%03d.yaml" % (ns, kind, k // 500), objs[k:k + 500])

    summary = {"objects": out.objects, "files": out.files, "bytes": out.bytes,
               "namespaces": NAMESPACES, "nodes": nodes, "units": units, "count_requested": count,
               "seed": seed, "kinds": dict(sorted(out.kinds.items()))}
    with open(manifest, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print("generated %s (seed %d)" % (out_dir, seed))
    w = max(len(k) for k in out.kinds)
    for k, n in sorted(out.kinds.items(), key=lambda kv: (-kv[1], kv[0])):
        print("  %-*s %7d" % (w, k, n))
    print("  %-*s %7d objects in %d files, %d bytes (%.1f MiB)" % (
        w, "total", out.objects, out.files, out.bytes, out.bytes / 1048576.0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
