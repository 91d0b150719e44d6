#!/usr/bin/env python3
"""ctl-load.py - load generator and probes for bench/controller-bench.sh.

Python 3 standard library only.  Talks to the API server directly (admin
kubeconfig from $KUBECONFIG, keep-alive HTTPS connections, a thread per
connection) because one kubectl process per object would dominate the time.

  ctl-load.py create  EXPECTED_JSON      create the whole load; write what each pod should show
  ctl-load.py settle  EXPECTED_JSON      wait until the scheduler has allocated the healthy claims
  ctl-load.py renew                      keep the fake nodes' Leases fresh (runs until killed)
  ctl-load.py diagnosed EXPECTED_JSON T0 poll until every pod shows what it should; print seconds since T0
  ctl-load.py react-setup N              the namespaces with exhausted quotas that react N needs
  ctl-load.py react N OUT_JSON           N fault-introduction samples, latency to the annotation
  ctl-load.py webhook-bodies DIR [--no-create]
                                         AdmissionReview bodies for the loaded webhook run (and the
                                         unallocated claim its Pod names, created here unless
                                         --no-create)
  ctl-load.py dump FILE                  the same load as one JSON array, without an API server:
                                         what the scheduler would have allocated written into the
                                         claims, the webhook run's claim included (a view for
                                         `webhook --objects`)

Load (defaults; BENCH_PODS scales the pod counts, BENCH_NODES the nodes, BENCH_DEVS the
devices per slice):
  100 Nodes (fake, created here: containerd 2.1 so CDI is on, pods 110, Leases renewed),
  5 drivers x 100 nodes = 500 ResourceSlices (8 devices each, published as admin),
  6 driver DaemonSets (5 with slice RBAC, 1 whose ServiceAccount has none; a
  nodeSelector no node has, so no driver pods exist),
  200 DeviceClasses: 190 valid, 4 with a misspelled driver, 3 for the driver
  without RBAC, 3 whose selector matches 2 devices in all,
  5,000 pods with one claim each: about 3,000 healthy (claims allocated by the
  real scheduler, pods bound to the fake nodes; no kubelet runs, so they stay
  Pending with every claim allocated, which the controller treats as healthy)
  and 330 for each fault: ClaimNotFound, DeviceClassNotFound,
  SelectorMatchesNoDriver, DriverRBACDenied, DevicesDoNotFit, QuotaExceeded.
  When the healthy pods outnumber the devices (issue 18's cluster: 50,000 pods, 1,000 nodes,
  10,000 devices: BENCH_DEVS=2), the healthy pods of a namespace share claims, as many to a
  claim as it takes (at most 256, the API server's limit on reservedFor): every pod of a
  claim is bound to its node and listed in its reservedFor.
"""
import base64
import http.client
import json
import os
import queue
import random
import ssl
import sys
import tempfile
import threading
import time
import urllib.parse

DRIVERS = ["gpu.example.com", "fpga.example.com", "nic.example.com", "tpu.example.com",
           "npu.example.com"]
TYPOS = ["gpu.exmaple.com", "fpga.exampel.com", "nic.example.cmo", "tpu.exmple.com"]
DENIED = "denied.example.com"
NODES = int(os.environ.get("BENCH_NODES", "100"))
DEVS = int(os.environ.get("BENCH_DEVS", "8"))
NVALID = 190
SCALE = int(os.environ.get("BENCH_PODS", "5000")) / 5000.0
NFAULT = max(1, int(330 * SCALE))
NQUOTA_NS = NFAULT  # one rejected claim per namespace: see the note in plan()
NHEALTHY = int(os.environ.get("BENCH_PODS", "5000")) - 6 * NFAULT - NQUOTA_NS
PODS_PER_NS = 100


def _fits(share):
    """Whether the healthy claims (SHARE pods to a claim) and the quota-held ones fit the
    devices, driver by driver (gpu's first node keeps its two RARE devices)."""
    need = [0] * len(DRIVERS)
    per_ns = -(-PODS_PER_NS // share)
    for nsi in range(-(-NHEALTHY // PODS_PER_NS)):
        for k in range(-(-min(PODS_PER_NS, NHEALTHY - nsi * PODS_PER_NS) // share)):
            need[((nsi * per_ns + k) % NVALID) % len(DRIVERS)] += 1
    for q in range(NQUOTA_NS):
        need[(q % NVALID) % len(DRIVERS)] += 1
    return all(n <= NODES * DEVS - (min(2, DEVS) if d == 0 else 0) for d, n in enumerate(need))


SHARE = next((k for k in range(1, 257) if _fits(k)), 0)
if not SHARE:
    sys.exit("ctl-load: %d devices are too few for %d healthy pods, even 256 to a claim" %
             (len(DRIVERS) * NODES * DEVS, NHEALTHY))
CLAIMS_PER_NS = -(-PODS_PER_NS // SHARE)
IMAGE = "registry.k8s.io/pause:3.10"

# ---- API client ------------------------------------------------------------


class Api:
    def __init__(self):
        path = os.environ.get("KUBECONFIG")
        if not path:
            sys.exit("ctl-load: KUBECONFIG is not set")
        cfg = json.loads(to_json_kubeconfig(path))
        ctx = {c["name"]: c["context"] for c in cfg["contexts"]}[cfg["current-context"]]
        cl = {c["name"]: c["cluster"] for c in cfg["clusters"]}[ctx["cluster"]]
        us = {u["name"]: u["user"] for u in cfg["users"]}[ctx["user"]]
        u = urllib.parse.urlparse(cl["server"])
        self.host, self.port = u.hostname, u.port or 443
        self.tmp = tempfile.mkdtemp(prefix="ctl-load.")
        ca = os.path.join(self.tmp, "ca.crt")
        crt = os.path.join(self.tmp, "client.crt")
        key = os.path.join(self.tmp, "client.key")
        for f, k in ((ca, cl["certificate-authority-data"]), (crt, us["client-certificate-data"]),
                     (key, us["client-key-data"])):
            with open(f, "wb") as fh:
                fh.write(base64.b64decode(k))
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(crt, key)
        for f in (ca, crt, key):
            os.unlink(f)
        os.rmdir(self.tmp)
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
            self.local.c = c
        return c

    def req(self, method, path, body=None, ctype="application/json"):
        data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
        for attempt in range(5):
            c = self.conn()
            try:
                hdr = {"Accept": "application/json"}
                if data is not None:
                    hdr["Content-Type"] = ctype
                c.request(method, path, body=data, headers=hdr)
                r = c.getresponse()
                out = r.read()
                if r.status == 429 or r.status >= 500:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                return r.status, out
            except (OSError, http.client.HTTPException):
                c.close()
                self.local.c = None
                time.sleep(0.2)
        raise RuntimeError("%s %s: no answer" % (method, path))

    def create(self, path, obj, ok_exists=True):
        st, out = self.req("POST", path, obj)
        if st in (200, 201):
            return json.loads(out)
        if st == 409 and ok_exists:
            return None
        raise RuntimeError("POST %s %s: %d %s" % (path, obj["metadata"].get("name"), st,
                                                   out[:300].decode(errors="replace")))

    def list(self, path, extra=""):
        items, cont = [], ""
        while True:
            q = "?limit=500" + extra + ("&continue=" + urllib.parse.quote(cont) if cont else "")
            st, out = self.req("GET", path + q)
            if st != 200:
                raise RuntimeError("GET %s: %d %s" % (path, st, out[:200]))
            d = json.loads(out)
            items += d.get("items", [])
            cont = d.get("metadata", {}).get("continue")
            if not cont:
                return items, d["metadata"].get("resourceVersion")


def to_json_kubeconfig(path):
    """The admin kubeconfig is YAML; kubectl converts it (once)."""
    import subprocess
    return subprocess.check_output(["kubectl", "--kubeconfig", path, "config", "view", "--raw",
                                    "-o", "json"])


def parallel(api, jobs, threads=6, done=None):
    """jobs: list of (path, obj).  Created by `threads` keep-alive connections."""
    q = queue.Queue()
    for j in jobs:
        q.put(j)
    errs = []

    def run():
        while True:
            try:
                path, obj = q.get_nowait()
            except queue.Empty:
                return
            try:
                r = api.create(path, obj)
                if done and r:
                    done(obj, r)
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append(str(e))
    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        sys.exit("ctl-load: %d creations failed, first: %s" % (len(errs), errs[0]))


# ---- objects ---------------------------------------------------------------

def meta(name, ns=None, **kw):
    m = {"name": name}
    if ns:
        m["namespace"] = ns
    m.update(kw)
    return m


def ns_path(ns, res, group=""):
    return ("/api/v1" if not group else "/apis/" + group) + "/namespaces/%s/%s" % (ns, res)


CLAIMS = ns_path("%s", "resourceclaims", "resource.k8s.io/v1")


def claim(ns, name, cls):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta(name, ns),
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": cls}}]}}}


def pod(ns, name, claim_name, labels=None, node=None):
    md = meta(name, ns, labels=labels) if labels else meta(name, ns)
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": md,
         "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": IMAGE,
                                     "resources": {"claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimName": claim_name}]}}
    if node:
        p["spec"]["nodeName"] = node
    return p


class Allocator:
    """Hands out distinct devices, node by node, per driver (as the scheduler would)."""
    def __init__(self):
        self.next = {d: 0 for d in DRIVERS}

    def take(self, drv):
        d = DRIVERS.index(drv)
        while True:
            k = self.next[drv]
            self.next[drv] += 1
            node, dev = k // DEVS, k % DEVS
            if node >= NODES:
                sys.exit("ctl-load: out of devices of " + drv)
            if d == 0 and node == 0 and dev < 2:
                continue  # the RARE devices stay for the scarce classes (DevicesDoNotFit)
            return node_name(node), "dev-%d" % dev


def allocation_status(drv, node, dev, pod_name, uid, prev=None):
    """A claim's status allocated on (drv, node, dev), reserved for the pod; with prev (an
    earlier status of the same claim, for another pod), prev with the pod added."""
    if prev:
        prev["status"]["reservedFor"].append({"resource": "pods", "name": pod_name, "uid": uid})
        return prev
    return {"status": {
        "allocation": {
            "devices": {"results": [{"request": "dev", "driver": drv, "pool": node, "device": dev}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": pod_name, "uid": uid}]}}


def device_class(name, expr):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta(name),
            "spec": {"selectors": [{"cel": {"expression": expr}}]}}


def driver_ds(name, driver, sa):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(name, "bench-drivers"),
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "serviceAccountName": sa,
                         "nodeSelector": {"bench.dra-doctor.io/no-such-node": "true"},
                         "containers": [{
                             "name": "plugin",
                             "image": "registry.k8s.io/dra-example-driver/dra-example-driver:v0.2.0",
                             "env": [{"name": "DRIVER_NAME", "value": driver},
                                     {"name": "CDI_ROOT", "value": "/var/run/cdi"},
                                     {"name": "NUM_DEVICES", "value": str(DEVS)}],
                             "volumeMounts": [
                                 {"name": "plugins-registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
                                 {"name": "cdi", "mountPath": "/var/run/cdi"}]}],
                         "volumes": [
                             {"name": "plugins-registry", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}},
                             {"name": "cdi", "hostPath": {"path": "/var/run/cdi"}}]}}}}


def node_name(i):
    return "bench-node-%03d" % i


def now_rfc3339(t=None):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def now_micro():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def lease(i):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": meta(node_name(i), "kube-node-lease"),
            "spec": {"holderIdentity": node_name(i), "leaseDurationSeconds": 40,
                     "renewTime": now_micro()}}


def node_status():
    t = now_rfc3339()
    cond = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "bench",
             "lastHeartbeatTime": t, "lastTransitionTime": t}]
    for c in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        cond.append({"type": c, "status": "False", "reason": "KubeletHas", "message": "bench",
                     "lastHeartbeatTime": t, "lastTransitionTime": t})
    res = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {"status": {"capacity": res, "allocatable": res, "conditions": cond,
                       "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                       "nodeInfo": {"kubeletVersion": "v1.36.3", "kubeProxyVersion": "v1.36.3",
                                    "containerRuntimeVersion": "containerd://2.1.4",
                                    "operatingSystem": "linux", "architecture": "amd64",
                                    "machineID": "", "systemUUID": "", "bootID": "",
                                    "kernelVersion": "6.1.0", "osImage": "Debian GNU/Linux 12"}}}


def slice_obj(i, d):
    drv = DRIVERS[d]
    devs = []
    for k in range(DEVS):
        model = "RARE" if (d == 0 and i == 0 and k < 2) else "STD"
        devs.append({"name": "dev-%d" % k,
                     "attributes": {"index": {"int": k}, "model": {"string": model}}})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": meta("%s-%s" % (node_name(i), drv.split(".")[0])),
            "spec": {"driver": drv, "nodeName": node_name(i),
                     "pool": {"name": node_name(i), "generation": 1, "resourceSliceCount": 1},
                     "devices": devs}}


def plan():
    """Everything to create, in dependency order, and each pod's expectation."""
    stages, expect = [], {}
    nss = set()
    core = "/api/v1"
    # Namespaces, driver identities, DaemonSets.
    st = [(core + "/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("bench-drivers")})]
    st.append((core + "/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("bench-react")}))
    stages.append(st)
    st = []
    rb = "/apis/rbac.authorization.k8s.io/v1"
    st.append((rb + "/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                      "metadata": meta("bench-driver"),
                                      "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                                                 "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]}))
    for d in range(len(DRIVERS) + 1):
        name = "driver-%d" % d if d < len(DRIVERS) else "driver-denied"
        st.append((ns_path("bench-drivers", "serviceaccounts"),
                   {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, "bench-drivers")}))
        st.append(("/apis/apps/v1/namespaces/bench-drivers/daemonsets",
                   driver_ds(name, DRIVERS[d] if d < len(DRIVERS) else DENIED, name)))
        if d < len(DRIVERS):
            st.append((rb + "/clusterrolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": meta("bench-" + name),
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "bench-drivers"}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-driver"}}))
    # 200 DeviceClasses.
    for c in range(NVALID):
        drv = DRIVERS[c % len(DRIVERS)]
        expr = "device.driver == '%s'" % drv
        if c % 3 == 1:
            expr += " && device.attributes['%s'].index < %d" % (drv, DEVS)
        st.append(("/apis/resource.k8s.io/v1/deviceclasses", device_class("cls-v-%03d" % c, expr)))
    for t, typo in enumerate(TYPOS):
        st.append(("/apis/resource.k8s.io/v1/deviceclasses", device_class("cls-typo-%d" % t, "device.driver == '%s'" % typo)))
    for t in range(3):
        st.append(("/apis/resource.k8s.io/v1/deviceclasses", device_class("cls-denied-%d" % t, "device.driver == '%s'" % DENIED)))
        st.append(("/apis/resource.k8s.io/v1/deviceclasses", device_class(
            "cls-scarce-%d" % t, "device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].model == 'RARE'")))
    # 500 ResourceSlices.
    for i in range(NODES):
        for d in range(len(DRIVERS)):
            st.append(("/apis/resource.k8s.io/v1/resourceslices", slice_obj(i, d)))
    stages.append(st)

    claims, pods = [], []
    alloc = Allocator()
    # Healthy: NHEALTHY pods on claims of valid classes, allocated and bound here (see the
    # README note in docs/benchmarks.md: the scheduler is not what is measured); a claim of
    # its own each, or SHARE pods of a namespace to a claim when the devices are too few.
    for i in range(NHEALTHY):
        nsi, j = divmod(i, PODS_PER_NS)
        ns = "bench-h-%02d" % nsi
        nss.add(ns)
        ci = nsi * CLAIMS_PER_NS + j // SHARE
        cname = "c-%04d" % ci
        c = NVALID and ci % NVALID
        drv = DRIVERS[c % len(DRIVERS)]
        if j % SHARE == 0:
            node, dev = alloc.take(drv)
            claims.append((CLAIMS % ns, claim(ns, cname, "cls-v-%03d" % c)))
        p = pod(ns, "p-%04d" % i, cname, node=node)
        p["x-alloc"] = (drv, node, dev, cname)
        pods.append((ns_path(ns, "pods"), p))
        expect["%s/p-%04d" % (ns, i)] = ""

    def fault(tag, code, cls_of, make_claim=True):
        for i in range(NFAULT):
            ns = "bench-%s-%d" % (tag, i // PODS_PER_NS)
            nss.add(ns)
            cname = "c-%04d" % i if make_claim else "missing-%04d" % i
            if make_claim:
                claims.append((CLAIMS % ns, claim(ns, cname, cls_of(i))))
            pods.append((ns_path(ns, "pods"), pod(ns, "p-%04d" % i, cname)))
            expect["%s/p-%04d" % (ns, i)] = code
    fault("cnf", "ClaimNotFound", None, make_claim=False)
    fault("dcnf", "DeviceClassNotFound", lambda i: "no-such-class-%d" % (i % 5))
    fault("typo", "SelectorMatchesNoDriver", lambda i: "cls-typo-%d" % (i % len(TYPOS)))
    fault("rbac", "DriverRBACDenied", lambda i: "cls-denied-%d" % (i % 3))
    fault("scarce", "DevicesDoNotFit|", lambda i: "cls-scarce-%d" % (i % 3))
    # QuotaExceeded: per namespace one claim uses the quota up (its pod is healthy); the
    # other claim was rejected by the quota, so its pod references a missing claim.  One
    # rejected claim per namespace, because the controller (at df8d0e2) reports
    # QuotaExceeded only for the first stand-in of a namespace and ClaimNotFound for the
    # rest (check_quota reports each quota key once).
    quotas = []
    per = (NFAULT + NQUOTA_NS - 1) // NQUOTA_NS
    for q in range(NQUOTA_NS):
        ns = "bench-quota-%d" % q
        nss.add(ns)
        qc = q % NVALID
        quotas.append((ns_path(ns, "resourcequotas"), {
            "apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("devices", ns),
            "spec": {"hard": {"cls-v-%03d.deviceclass.resource.k8s.io/devices" % qc: "1"}}}))
        claims.append((CLAIMS % ns, claim(ns, "held", "cls-v-%03d" % qc)))
        node, dev = alloc.take(DRIVERS[qc % len(DRIVERS)])
        p = pod(ns, "held", "held", node=node)
        p["x-alloc"] = (DRIVERS[qc % len(DRIVERS)], node, dev, "held")
        pods.append((ns_path(ns, "pods"), p))
        expect["%s/held" % ns] = ""
    for i in range(NFAULT):
        ns = "bench-quota-%d" % (i // per)
        pods.append((ns_path(ns, "pods"), pod(ns, "p-%04d" % i, "rejected-%04d" % i)))
        expect["%s/p-%04d" % (ns, i)] = "QuotaExceeded"
    stages.insert(1, [(core + "/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(n)})
                      for n in sorted(nss)])
    stages.append(quotas)
    stages.append(claims)
    stages.append(pods)
    return stages, expect


def create_nodes(api):
    jobs = [("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": meta(
        node_name(i), labels={"kubernetes.io/hostname": node_name(i), "kubernetes.io/os": "linux"})})
        for i in range(NODES)]
    parallel(api, jobs)
    parallel(api, [("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease(i))
                   for i in range(NODES)])
    for i in range(NODES):
        st, out = api.req("PATCH", "/api/v1/nodes/%s/status" % node_name(i), node_status(),
                          "application/merge-patch+json")
        if st != 200:
            sys.exit("ctl-load: node status: %d %s" % (st, out[:200]))


def parallel_pods(api, jobs, done):
    """Like parallel(), but hands each created pod to done(original object, created object);
    the x-alloc hint is not sent."""
    class Strip(dict):
        def __init__(self, o):
            super().__init__({k: v for k, v in o.items() if k != "x-alloc"})
            self.orig = o
    parallel(api, [(p, Strip(o)) for p, o in jobs], done=lambda obj, cr: done(obj.orig, cr))


def wait_quotas(api):
    """Quota admission refuses claims until the quota controller has written status.hard.
    Thousands of quotas on two busy cores may take it minutes: up to 10 minutes of them."""
    deadline = time.time() + 600
    while True:
        qs, _ = api.list("/api/v1/resourcequotas")
        done = sum(1 for q in qs if (q.get("status") or {}).get("hard"))
        if qs and done == len(qs):
            return
        if time.time() > deadline:
            sys.exit("ctl-load: ResourceQuota status never computed (%d of %d after 600 s)" %
                     (done, len(qs)))
        time.sleep(0.5)


def cmd_create(expected_path):
    api = Api()
    t = time.time()
    create_nodes(api)
    stages, expect = plan()
    counts = {}
    allocs = {}
    lock = threading.Lock()

    def pod_done(obj, created):
        if "x-alloc" in obj:
            drv, node, dev, cname = obj["x-alloc"]
            ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
            with lock:
                allocs[(ns, cname)] = allocation_status(drv, node, dev, name,
                                                        created["metadata"]["uid"],
                                                        allocs.get((ns, cname)))
    for st in stages:
        if any("x-alloc" in o for _, o in st):
            parallel_pods(api, st, pod_done)
        else:
            parallel(api, st)
        if st and st[0][1]["kind"] == "ResourceQuota":
            wait_quotas(api)
        for p, o in st:
            counts[o["kind"]] = counts.get(o["kind"], 0) + 1
    counts["Node"] = NODES
    # The scheduler's part for the healthy pods: allocation and reservation in the claim status.
    q = queue.Queue()
    for (ns, cname), body in allocs.items():
        q.put((ns, cname, body))
    errs = []

    def put_status():
        while True:
            try:
                ns, cname, body = q.get_nowait()
            except queue.Empty:
                return
            st, out = api.req("PATCH", (CLAIMS % ns) + "/" + cname + "/status", body,
                              "application/merge-patch+json")
            if st != 200:
                errs.append("%s/%s: %d %s" % (ns, cname, st, out[:200]))
    ts = [threading.Thread(target=put_status) for _ in range(6)]
    for t_ in ts:
        t_.start()
    for t_ in ts:
        t_.join()
    if errs:
        sys.exit("ctl-load: %d claim allocations failed, first: %s" % (len(errs), errs[0]))
    counts["allocated ResourceClaim"] = len(allocs)
    with open(expected_path, "w") as f:
        json.dump(expect, f)
    print("created %s in %.1f s" % (", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())),
                                     time.time() - t))


def cmd_renew():
    """The kubelets' heartbeats: Lease renewTime and the Ready condition, every 10 s (the node
    lifecycle controller marks a node Unknown and taints it after 50 s without them)."""
    api = Api()
    while True:
        for i in range(NODES):
            body = {"spec": {"renewTime": now_micro()}}
            try:
                api.req("PATCH", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" +
                        node_name(i), body, "application/merge-patch+json")
                api.req("PATCH", "/api/v1/nodes/%s/status" % node_name(i), node_status(),
                        "application/merge-patch+json")
            except RuntimeError:
                pass
        time.sleep(10)


def cmd_settle(expected_path):
    """Wait until the healthy pods' claims are allocated and bound (the scheduler's work)."""
    api = Api()
    want = sum(1 for v in json.load(open(expected_path)).values() if v == "")
    t, last, stable = time.time(), -1, 0
    while time.time() - t < 900:
        pods, _ = api.list("/api/v1/pods", "&fieldSelector=" + urllib.parse.quote("spec.nodeName!="))
        n = len([p for p in pods if p["metadata"]["namespace"].startswith("bench-")])
        print("settle: %d/%d pods bound after %.0f s" % (n, want, time.time() - t), flush=True)
        if n >= want:
            stable = stable + 1 if n == last else 0
            if stable >= 1:
                return
        last = n
        time.sleep(5)
    sys.exit("ctl-load: the scheduler did not bind every healthy pod in 900 s")


def classify(pods, expect):
    ok, wrong, missing = 0, {}, 0
    seen = set()
    for p in pods:
        m = p["metadata"]
        k = m["namespace"] + "/" + m["name"]
        if k not in expect:
            continue
        seen.add(k)
        have = (m.get("annotations") or {}).get("dra-doctor.io/root-cause", "")
        if have in expect[k].split("|"):
            ok += 1
        else:
            key = "%s->%s" % (expect[k] or "healthy", have or "none")
            wrong[key] = wrong.get(key, 0) + 1
    missing = len(expect) - len(seen)
    return ok, wrong, missing


def cmd_diagnosed(expected_path, t0, timeout=900):
    api = Api()
    expect = json.load(open(expected_path))
    t0 = float(t0)
    while True:
        pods, _ = api.list("/api/v1/pods")
        t = time.time()
        ok, wrong, missing = classify(pods, expect)
        print("diagnosed: %.1f s: %d/%d as expected; %s%s" % (
            t - t0, ok, len(expect), ", ".join("%s %d" % kv for kv in sorted(wrong.items())) or "-",
            "; %d missing" % missing if missing else ""), file=sys.stderr, flush=True)
        if ok == len(expect):
            print("%.2f" % (t - t0))
            return
        if t - t0 > timeout:
            print("timeout")
            sys.exit(1)
        time.sleep(0.5)


# ---- reaction latency --------------------------------------------------------

KINDS = ["ClaimNotFound", "QuotaExceeded", "DeviceClassNotFound", "SelectorMatchesNoDriver",
         "DriverRBACDenied"]


def cmd_react(n, out_path):
    api = Api()
    n = int(n)
    seen = {}  # pod name -> (monotonic time, root cause)
    lock = threading.Lock()
    sel = "&labelSelector=" + urllib.parse.quote("bench.dra-doctor.io/react=1")
    _, rv = api.list("/api/v1/pods", sel)
    stop = threading.Event()

    def watch():
        nonlocal rv
        while not stop.is_set():
            c = http.client.HTTPSConnection(api.host, api.port, context=api.ctx, timeout=30)
            try:
                c.request("GET", "/api/v1/pods?watch=1&timeoutSeconds=25&resourceVersion=" + rv + sel)
                r = c.getresponse()
                while not stop.is_set():
                    line = r.readline()
                    if not line:
                        break
                    t = time.monotonic()
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    m = obj.get("metadata", {})
                    if ev.get("type") == "ERROR":
                        rv = "0"
                        break
                    rv = m.get("resourceVersion", rv)
                    rc = (m.get("annotations") or {}).get("dra-doctor.io/root-cause")
                    if rc:
                        with lock:
                            seen.setdefault(m["name"], (t, rc))
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.1)
            finally:
                c.close()

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    time.sleep(1.0)
    rnd = random.Random(1)
    samples = []
    ns = "bench-react"
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        name = "r-%04d" % i
        if kind == "ClaimNotFound":
            cname, pns = "gone-%04d" % i, ns
        elif kind == "QuotaExceeded":
            pns = "bench-react-q-%d" % (i // len(KINDS))
            cname = "rejected-%04d" % i
        else:
            cls = {"DeviceClassNotFound": "no-such-class-r", "SelectorMatchesNoDriver": "cls-typo-0",
                   "DriverRBACDenied": "cls-denied-0"}[kind]
            cname = "rc-%04d" % i
            api.create(CLAIMS % ns, claim(ns, cname, cls))
            pns = ns
        # QuotaExceeded needs an exhausted quota in the pod's namespace: each
        # bench-react-q-N has one (cmd_react_setup) whose single claim is held.
        t0 = time.monotonic()
        api.create(ns_path(pns, "pods"), pod(pns, name, cname, {"bench.dra-doctor.io/react": "1"}))
        deadline = t0 + 30
        got = None
        while time.monotonic() < deadline:
            with lock:
                got = seen.get(name)
            if got and got[1] == kind:
                break
            time.sleep(0.005)
        if not got or got[1] != kind:
            print("react: sample %d (%s): no annotation %s within 30 s (have %s)" % (
                i, kind, kind, got), file=sys.stderr)
            samples.append({"kind": kind, "latency": None})
        else:
            samples.append({"kind": kind, "latency": got[0] - t0})
        time.sleep(0.1 + rnd.random() * 0.2)
    stop.set()
    lat = sorted(s["latency"] for s in samples if s["latency"] is not None)
    with open(out_path, "w") as f:
        json.dump({"samples": samples}, f)

    def pct(p):
        return lat[min(len(lat) - 1, int(round(p / 100.0 * (len(lat) - 1))))] if lat else float("nan")
    print("react: %d samples, %d answered: p50 %.3f s, p90 %.3f s, p99 %.3f s, max %.3f s, min %.3f s" % (
        n, len(lat), pct(50), pct(90), pct(99), lat[-1] if lat else float("nan"),
        lat[0] if lat else float("nan")))
    for k in KINDS:
        kl = sorted(s["latency"] for s in samples if s["kind"] == k and s["latency"] is not None)
        if kl:
            print("react:   %-24s n=%3d p50 %.3f s max %.3f s" % (k, len(kl), kl[len(kl) // 2], kl[-1]))


def cmd_react_setup(n):
    """bench-react-q-N: namespaces whose device quota one held claim uses up."""
    api = Api()
    nss = ["bench-react-q-%d" % i for i in range((int(n) + len(KINDS) - 1) // len(KINDS))]
    parallel(api, [("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": meta(ns)}) for ns in nss])
    parallel(api, [(ns_path(ns, "resourcequotas"), {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("devices", ns),
        "spec": {"hard": {"cls-v-001.deviceclass.resource.k8s.io/devices": "1"}}}) for ns in nss])
    wait_quotas(api)
    parallel(api, [(CLAIMS % ns, claim(ns, "held", "cls-v-001")) for ns in nss])


WH_FIT = ("bench-react", "wh-fit", "cls-v-000")


def cmd_dump(path):
    objs = [{"apiVersion": "v1", "kind": "Node", "metadata": meta(
        node_name(i), labels={"kubernetes.io/hostname": node_name(i), "kubernetes.io/os": "linux"}),
        "status": node_status()["status"]} for i in range(NODES)]
    stages, _ = plan()
    claims = {}
    for st in stages:
        for _, o in st:
            objs.append(o)
            if o["kind"] == "ResourceClaim":
                claims[(o["metadata"]["namespace"], o["metadata"]["name"])] = o
    for o in objs:
        if "x-alloc" in o:
            drv, node, dev, cname = o.pop("x-alloc")
            ns, name = o["metadata"]["namespace"], o["metadata"]["name"]
            uid = "u-%s-%s" % (ns, name)
            o["metadata"]["uid"] = uid
            cl = claims[(ns, cname)]
            cl.update(allocation_status(drv, node, dev, name, uid, cl if "status" in cl else None))
    objs.append(claim(*WH_FIT))
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
    print("dump: %d objects" % len(objs))


def cmd_webhook_bodies(out, *flags):
    """The loaded webhook run's requests, as kube-apiserver sends them: each is answered at
    once (a denial or a warning waits for the caches by design, so it would measure the wait,
    not the decision).  The Pod names a claim created here, unallocated on a class every node
    serves, so its admission runs the allocator over the whole inventory until a node fits."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "genwh", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen-webhook-objects.py"))
    genwh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(genwh)
    if "--no-create" not in flags:
        Api().create(CLAIMS % WH_FIT[0], claim(*WH_FIT))
    cls = device_class("bench-wh-good", "device.driver == '%s'" % DRIVERS[0])
    bodies = {
        "1-deviceclass-good": genwh.review("0b8c6a0e-0000-4000-8000-000000000201", "resource.k8s.io", "v1",
                                           "DeviceClass", "deviceclasses", "CREATE", "", cls),
        "2-claim": genwh.review("0b8c6a0e-0000-4000-8000-000000000202", "resource.k8s.io", "v1",
                                "ResourceClaim", "resourceclaims", "CREATE", "bench-react",
                                claim("bench-react", "wh-new", "cls-v-001")),
        "3-pod-allocates": genwh.review("0b8c6a0e-0000-4000-8000-000000000203", "", "v1", "Pod", "pods",
                                        "CREATE", "bench-react", pod(WH_FIT[0], "wh-pod", WH_FIT[1])),
    }
    os.makedirs(out, exist_ok=True)
    for name, r in bodies.items():
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(r, f)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"create": cmd_create, "settle": cmd_settle, "renew": cmd_renew,
          "diagnosed": cmd_diagnosed, "react": cmd_react, "react-setup": cmd_react_setup,
          "webhook-bodies": cmd_webhook_bodies, "dump": cmd_dump}.get(cmd)
    if not fn:
        sys.exit(__doc__)
    fn(*args)


if __name__ == "__main__":
    main()
