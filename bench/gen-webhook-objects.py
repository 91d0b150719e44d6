#!/usr/bin/env python3
"""gen-webhook-objects.py - inputs of bench/webhook-bench.sh (Python 3, standard library only).

  gen-webhook-objects.py gen OUT_DIR
      OUT_DIR/objects/*.json   the cluster view: 10,000 objects of the kinds the webhook
                               watches, as `kind: List` files (`dra-doctor webhook --objects`)
      OUT_DIR/cluster/*.json   the same objects plus what a real API server needs first
                               (Namespaces, Nodes), for `load`
      OUT_DIR/reviews/*.json   AdmissionReview v1 request bodies, as the API server sends them
      OUT_DIR/api/*.json       DeviceClass bodies for POST .../deviceclasses (@@SEQ@@ in the name)
      OUT_DIR/capacity/*.json  warned AdmissionReviews (a Pod naming a missing template) in
                               8 namespaces, for the webhook's capacity
      OUT_DIR/summary.json     counts
  gen-webhook-objects.py load OUT_DIR
      creates OUT_DIR/cluster/ in the cluster of $KUBECONFIG (admin) over 8 keep-alive HTTPS
      connections, then writes the allocations of the allocated claims (status subresource)
  gen-webhook-objects.py count
      prints how many objects of each watched kind the cluster holds (and allocated claims)

The view (deterministic; valid resource.k8s.io/v1 shapes):
  200 DeviceClasses     cls-000..199 over 5 drivers; a third also read an attribute
                        (model), a third a capacity (memory)
  500 ResourceSlices    5 drivers x 100 nodes, 8 devices each (4,000 devices)
  8,880 ResourceClaims  in 200 namespaces (bench-ns-000..199), one or two devices each;
                        2,000 allocated (distinct devices)
  300 ResourceClaimTemplates
  100 ResourceQuotas    in bench-ns-000..099, with status.used as the quota controller
                        counts it; bench-ns-000's device quota for cls-000 is used up
  20 DaemonSets         DRA kubelet plugins: the 5 publishing drivers and 15 more
                        (installed, not publishing); a nodeSelector no node has
The review bodies: a DeviceClass CREATE with a misspelled driver (denied), a correct
DeviceClass CREATE (allowed), a ResourceClaim CREATE over bench-ns-000's quota (warned), and a
Pod CREATE with a template claim (bench-ns-001).
"""
import json
import os
import queue
import sys
import threading
import time
import zlib

DRIVERS = ["gpu.example.com", "fpga.example.com", "nic.example.com", "tpu.example.com",
           "npu.example.com"]
EXTRA_DRIVERS = ["drv-%02d.example.org" % i for i in range(15)]
NCLASSES, NNODES, DEVS = 200, 100, 8
NCLAIMS, NALLOC, NTEMPLATES, NQUOTAS, NNS = 8880, 2000, 300, 100, 200
IMAGE = "registry.k8s.io/dra-example-driver/dra-example-driver:v0.2.0"
R = "resource.k8s.io/v1"


def meta(name, ns=None, **kw):
    m = {"name": name}
    if ns:
        m["namespace"] = ns
    m.update(kw)
    return m


def ns_name(i):
    return "bench-ns-%03d" % i


def node_name(i):
    return "bench-node-%03d" % i


def cls_name(i):
    return "cls-%03d" % i


def cls_driver(i):
    return DRIVERS[i % len(DRIVERS)]


def device_class(name, drv, variant):
    expr = "device.driver == '%s'" % drv
    if variant == 1:
        expr += " && device.attributes['%s'].model == 'STD'" % drv
    elif variant == 2:
        expr += " && device.capacity['%s'].memory.compareTo(quantity('16Gi')) >= 0" % drv
    return {"apiVersion": R, "kind": "DeviceClass", "metadata": meta(name),
            "spec": {"selectors": [{"cel": {"expression": expr}}]}}


def slice_obj(node, d):
    drv = DRIVERS[d]
    devs = [{"name": "dev-%d" % k,
             "attributes": {"index": {"int": k}, "model": {"string": "STD"},
                            "driverVersion": {"version": "1.0.0"}},
             "capacity": {"memory": {"value": "80Gi"}}} for k in range(DEVS)]
    return {"apiVersion": R, "kind": "ResourceSlice",
            "metadata": meta("%s-%s" % (node_name(node), drv.split(".")[0])),
            "spec": {"driver": drv, "nodeName": node_name(node),
                     "pool": {"name": node_name(node), "generation": 1, "resourceSliceCount": 1},
                     "devices": devs}}


def claim_spec(i):
    c = i % NCLASSES
    reqs = [{"name": "dev", "exactly": {"deviceClassName": cls_name(c), "allocationMode": "ExactCount",
                                        "count": 1}}]
    if i % 10 == 9:  # a tenth ask for a second device of another class
        reqs.append({"name": "dev2", "exactly": {"deviceClassName": cls_name((c + 1) % NCLASSES),
                                                 "allocationMode": "ExactCount", "count": 1}})
    return {"devices": {"requests": reqs}}


def daemonset(name, drv):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(name, "bench-drivers"),
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "nodeSelector": {"bench.dra-doctor.io/no-such-node": "true"},
                         "containers": [{
                             "name": "plugin", "image": IMAGE,
                             "env": [{"name": "DRIVER_NAME", "value": drv},
                                     {"name": "CDI_ROOT", "value": "/var/run/cdi"}],
                             "volumeMounts": [
                                 {"name": "plugins", "mountPath": "/var/lib/kubelet/plugins"},
                                 {"name": "plugins-registry",
                                  "mountPath": "/var/lib/kubelet/plugins_registry"},
                                 {"name": "cdi", "mountPath": "/var/run/cdi"}]}],
                         "volumes": [
                             {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/plugins/" + drv}},
                             {"name": "plugins-registry",
                              "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}},
                             {"name": "cdi", "hostPath": {"path": "/var/run/cdi"}}]}}}}


def build():
    classes = [device_class(cls_name(i), cls_driver(i), i % 3) for i in range(NCLASSES)]
    slices = [slice_obj(n, d) for n in range(NNODES) for d in range(len(DRIVERS))]
    # Claims: round-robin over namespaces; the first NALLOC that request one device of a
    # class get a distinct device of its driver.
    claims, allocs = [], {}
    nextdev = {d: 0 for d in DRIVERS}
    for i in range(NCLAIMS):
        ns = ns_name(i % NNS)
        spec = claim_spec(i)
        c = {"apiVersion": R, "kind": "ResourceClaim", "metadata": meta("claim-%05d" % i, ns),
             "spec": spec}
        if len(allocs) < NALLOC and len(spec["devices"]["requests"]) == 1:
            drv = cls_driver(i % NCLASSES)
            k = nextdev[drv]
            nextdev[drv] += 1
            node, dev = k // DEVS, k % DEVS
            st = {"allocation": {
                "devices": {"results": [{"request": "dev", "driver": drv, "pool": node_name(node),
                                         "device": "dev-%d" % dev}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node_name(node)]}]}]}}}
            c["status"] = st
            allocs[(ns, c["metadata"]["name"])] = st
        claims.append(c)
    templates = []
    for i in range(NTEMPLATES):
        ns = ns_name(i % NNS)
        templates.append({"apiVersion": R, "kind": "ResourceClaimTemplate",
                          "metadata": meta("tmpl-%03d" % i, ns),
                          "spec": {"spec": claim_spec(i * 7)}})
    # Quotas: what the quota controller would count (claims, devices per class), with room
    # to spare, except bench-ns-000's device quota for cls-000, which is used up.
    used = {}
    for c in claims:
        ns = c["metadata"]["namespace"]
        u = used.setdefault(ns, {})
        u["count/resourceclaims.resource.k8s.io"] = u.get("count/resourceclaims.resource.k8s.io", 0) + 1
        for r in c["spec"]["devices"]["requests"]:
            k = "%s.deviceclass.resource.k8s.io/devices" % r["exactly"]["deviceClassName"]
            u[k] = u.get(k, 0) + r["exactly"]["count"]
    quotas = []
    for q in range(NQUOTAS):
        ns = ns_name(q)
        u = used.get(ns, {})
        hard = {k: str(v * 2 + 2) for k, v in u.items()}
        if q == 0:
            hard["cls-000.deviceclass.resource.k8s.io/devices"] = str(u["cls-000.deviceclass.resource.k8s.io/devices"])
        quotas.append({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("devices", ns),
                       "spec": {"hard": hard},
                       "status": {"hard": hard, "used": {k: str(v) for k, v in u.items()}}})
    dss = [daemonset("plugin-%s" % d.split(".")[0], d) for d in DRIVERS]
    dss += [daemonset("plugin-%s" % d.split(".")[0], d) for d in EXTRA_DRIVERS]
    view = {"deviceclasses": classes, "resourceslices": slices, "resourceclaims": claims,
            "resourceclaimtemplates": templates, "resourcequotas": quotas, "daemonsets": dss}
    return view, allocs


def review(uid, group, version, kind, resource, op, ns, obj):
    """An AdmissionReview as kube-apiserver sends it for a CREATE."""
    name = obj["metadata"]["name"]
    o = json.loads(json.dumps(obj))
    md = o["metadata"]
    md.setdefault("uid", "6f1e4a52-0c55-4bd6-9a5e-%012x" % zlib.crc32(name.encode()))
    md["creationTimestamp"] = "2025-01-01T00:00:00Z"
    md["generation"] = 1
    md["managedFields"] = [{"manager": "kubectl-client-side-apply", "operation": "Update",
                            "apiVersion": o["apiVersion"], "time": "2025-01-01T00:00:00Z",
                            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}}}}]
    md.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = \
        json.dumps(obj, separators=(",", ":")) + "\n"
    gv = {"group": group, "version": version}
    req = {"uid": uid, "kind": dict(gv, kind=kind), "resource": dict(gv, resource=resource),
           "requestKind": dict(gv, kind=kind), "requestResource": dict(gv, resource=resource),
           "name": name, "operation": op,
           "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
           "object": o, "oldObject": None, "dryRun": False,
           "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                       "fieldManager": "kubectl-client-side-apply", "fieldValidation": "Strict"}}
    if ns:
        req["namespace"] = ns
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": req}


def pod(name, ns, tmpl):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, ns, labels={"app": "trainer"}),
            "spec": {"containers": [{
                "name": "ctr", "image": "registry.k8s.io/pause:3.10", "imagePullPolicy": "IfNotPresent",
                "resources": {"claims": [{"name": "gpu"}], "requests": {"cpu": "100m", "memory": "64Mi"}},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "readOnly": True}]}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": tmpl}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
                "schedulerName": "default-scheduler", "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
                "priority": 0,
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                                 "tolerationSeconds": 300},
                                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                                 "tolerationSeconds": 300}],
                "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                                  "fieldPath": "metadata.namespace"}}]}}]}}]},
            "status": {"phase": "Pending", "qosClass": "Burstable"}}


def dump(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"))


def gen(out):
    view, allocs = build()
    n = 0
    for kind, items in view.items():
        dump(os.path.join(out, "objects", kind + ".json"), {"apiVersion": "v1", "kind": "List", "items": items})
        n += len(items)
    # The cluster: namespaces and nodes first; claims without status (written by `load`).
    nss = sorted({o["metadata"]["namespace"] for items in view.values() for o in items
                  if "namespace" in o["metadata"]})
    pre = [{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(x)} for x in nss]
    pre += [{"apiVersion": "v1", "kind": "Node", "metadata": meta(node_name(i), labels={
        "kubernetes.io/hostname": node_name(i), "kubernetes.io/os": "linux"})} for i in range(NNODES)]
    dump(os.path.join(out, "cluster", "0-pre.json"), pre)
    cl = []
    for kind in ("deviceclasses", "resourceslices", "daemonsets", "resourcequotas",
                 "resourceclaimtemplates", "resourceclaims"):
        for o in view[kind]:
            o = dict(o)
            o.pop("status", None)
            cl.append(o)
    dump(os.path.join(out, "cluster", "1-objects.json"), cl)
    dump(os.path.join(out, "cluster", "2-allocations.json"),
         [{"namespace": k[0], "name": k[1], "status": v} for k, v in sorted(allocs.items())])

    typo = device_class("bench-typo", "gpu.exmaple.com", 0)
    good = device_class("bench-good", "gpu.example.com", 1)
    over = {"apiVersion": R, "kind": "ResourceClaim", "metadata": meta("bench-over-quota", ns_name(0)),
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": {
                "deviceClassName": cls_name(0), "allocationMode": "ExactCount", "count": 1}}]}}}
    p = pod("bench-trainer", ns_name(1), "tmpl-001")
    reviews = {
        "1-deviceclass-typo": review("0b8c6a0e-0000-4000-8000-000000000001", "resource.k8s.io", "v1",
                                     "DeviceClass", "deviceclasses", "CREATE", "", typo),
        "2-deviceclass-good": review("0b8c6a0e-0000-4000-8000-000000000002", "resource.k8s.io", "v1",
                                     "DeviceClass", "deviceclasses", "CREATE", "", good),
        "3-claim-over-quota": review("0b8c6a0e-0000-4000-8000-000000000003", "resource.k8s.io", "v1",
                                     "ResourceClaim", "resourceclaims", "CREATE", ns_name(0), over),
        "4-pod-template-claim": review("0b8c6a0e-0000-4000-8000-000000000004", "", "v1", "Pod", "pods",
                                       "CREATE", ns_name(1), p),
    }
    for name, r in reviews.items():
        dump(os.path.join(out, "reviews", name + ".json"), r)
    # The capacity bodies: Pods naming a template that does not exist (each warned
    # ClaimTemplateNotFound, and so waiting for the caches), one per namespace of 8.
    for i in range(8):
        w = pod("bench-burst-%d" % i, ns_name(i), "no-such-template")
        dump(os.path.join(out, "capacity", "warned-%d.json" % i),
             review("0b8c6a0e-0000-4000-8000-0000000001%02d" % i, "", "v1", "Pod", "pods",
                    "CREATE", ns_name(i), w))
    for name, drv in (("deviceclass-good", "gpu.example.com"), ("deviceclass-typo", "gpu.exmaple.com")):
        c = device_class("bench-api-@@SEQ@@", drv, 0)
        c["metadata"]["labels"] = {"bench.dra-doctor.io/api": "true"}
        dump(os.path.join(out, "api", name + ".json"), c)
    counts = {k: len(v) for k, v in view.items()}
    counts["total"] = n
    counts["allocated_claims"] = len(allocs)
    counts["namespaces"] = len(nss)
    counts["nodes"] = NNODES
    counts["objects_bytes"] = sum(os.path.getsize(os.path.join(out, "objects", k + ".json")) for k in view)
    counts["review_bytes"] = {k: os.path.getsize(os.path.join(out, "reviews", k + ".json")) for k in reviews}
    dump(os.path.join(out, "summary.json"), counts)
    print(json.dumps(counts))


# ---- the API server ----------------------------------------------------------

def _ctl_load():
    """bench/ctl-load.py's API client (admin kubeconfig, keep-alive HTTPS, one connection per
    thread, retries on 429/5xx): one client for both benchmarks."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "ctl_load", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctl-load.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


Api = _ctl_load().Api


PLURAL = {"Namespace": ("", "namespaces"), "Node": ("", "nodes"),
          "DeviceClass": ("resource.k8s.io/v1", "deviceclasses"),
          "ResourceSlice": ("resource.k8s.io/v1", "resourceslices"),
          "ResourceClaim": ("resource.k8s.io/v1", "resourceclaims"),
          "ResourceClaimTemplate": ("resource.k8s.io/v1", "resourceclaimtemplates"),
          "ResourceQuota": ("", "resourcequotas"), "DaemonSet": ("apps/v1", "daemonsets")}


def path_of(o, name=None, sub=""):
    gv, res = PLURAL[o["kind"]] if isinstance(o, dict) else o
    base = "/api/v1" if not gv else "/apis/" + gv
    ns = o["metadata"].get("namespace") if isinstance(o, dict) else None
    p = base + ("/namespaces/%s" % ns if ns else "") + "/" + res
    return p + ("/" + name if name else "") + sub


def parallel(api, jobs, threads=8):
    q = queue.Queue()
    for j in jobs:
        q.put(j)
    errs = []

    def run():
        while True:
            try:
                method, path, body, ctype = q.get_nowait()
            except queue.Empty:
                return
            try:
                st, out = api.req(method, path, body, ctype)
                if st not in (200, 201) and not (st == 409 and method == "POST"):
                    errs.append("%s %s: %d %s" % (method, path, st, out[:300].decode(errors="replace")))
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append(str(e))
    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        sys.exit("gen-webhook-objects: %d requests failed, first: %s" % (len(errs), errs[0]))


def load(out):
    api = Api()
    t0 = time.time()
    with open(os.path.join(out, "cluster", "0-pre.json")) as f:
        pre = json.load(f)
    parallel(api, [("POST", path_of(o), o, "application/json") for o in pre])
    with open(os.path.join(out, "cluster", "1-objects.json")) as f:
        objs = json.load(f)
    # Quotas before claims, so that the quota admission counts every claim.
    first = [o for o in objs if o["kind"] != "ResourceClaim"]
    parallel(api, [("POST", path_of(o), o, "application/json") for o in first])
    claims = [o for o in objs if o["kind"] == "ResourceClaim"]
    parallel(api, [("POST", path_of(o), o, "application/json") for o in claims])
    with open(os.path.join(out, "cluster", "2-allocations.json")) as f:
        allocs = json.load(f)
    jobs = []
    for a in allocs:
        p = "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s/status" % (a["namespace"], a["name"])
        jobs.append(("PATCH", p, {"status": a["status"]}, "application/merge-patch+json"))
    parallel(api, jobs)
    print("gen-webhook-objects: created %d objects (+%d namespaces and nodes), %d allocations in %.1f s"
          % (len(objs), len(pre), len(allocs), time.time() - t0))


def count():
    api = Api()
    res = {}
    for kind in ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
                 "ResourceQuota", "DaemonSet"):
        gv, plural = PLURAL[kind]
        base = ("/api/v1" if not gv else "/apis/" + gv) + "/" + plural
        items, _ = api.list(base)
        n = len(items)
        alloc = sum(1 for o in items if o.get("status", {}).get("allocation"))
        res[plural] = n
        if kind == "ResourceClaim":
            res["allocated_claims"] = alloc
    res["total"] = sum(v for k, v in res.items() if k != "allocated_claims")
    print(json.dumps(res))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "gen":
        gen(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "load":
        load(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] == "count":
        count()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
