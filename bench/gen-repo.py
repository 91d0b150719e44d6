#!/usr/bin/env python3
"""Generate a deterministic GitOps-like repository of Kubernetes manifests for
the lint benchmark.

Usage: gen-repo.py OUT_DIR [COUNT [SEED]] [--manifest PATH]

  OUT_DIR   directory to create (must not exist, or be empty)
  COUNT     minimum number of Kubernetes objects (default 50000)
  SEED      random seed (default 1); same COUNT and SEED give the same bytes
  --manifest PATH   where to write the JSON summary (default OUT_DIR.manifest.json,
                    beside the tree so that linters do not read it)

The repository mixes the layouts found in real GitOps repositories: one file
per object, one multi-document YAML file per application, one bundle per
namespace, JSON files, and a few `kind: List` files.  Kinds: Namespace,
ResourceQuota (with <class>.deviceclass.resource.k8s.io/devices limits),
ServiceAccount, Role, RoleBinding, ClusterRole, ClusterRoleBinding,
Deployment, StatefulSet, Job, CronJob, DaemonSet (the DRA driver), Service,
ConfigMap, DeviceClass (CEL selectors), ResourceClaimTemplate, ResourceClaim
and ResourceSlice (resource.k8s.io/v1).

The content is consistent, so a correct linter should report few or no errors:
every claim names an existing DeviceClass whose driver publishes
ResourceSlices, every pod-level resourceClaims entry names a template or claim
in the same namespace and is used by a container, every RoleBinding names an
existing Role and ServiceAccount, Services select existing pods, quotas are
at least twice what the namespace asks for, and CEL expressions only use
attributes that the driver publishes.

Prints the number of objects by kind, the number of files and the total bytes.
Standard library only.
"""
import json
import os
import random
import sys
from collections import Counter

# --------------------------------------------------------------------------
# A small YAML emitter (block style, deterministic).

_PLAIN_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./")
_RESERVED = {"", "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def _scalar(v):
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return str(v)
    s = str(v)
    if (s.lower() in _RESERVED or not set(s) <= _PLAIN_OK or s[0] in "-.0123456789"
            or s.endswith(":")):
        return json.dumps(s)
    return s


def _emit(v, indent, out):
    pad = " " * indent
    if isinstance(v, dict):
        if not v:
            out.append(" {}\n")
            return
        out.append("\n")
        for k, x in v.items():
            out.append(pad + _scalar(k) + ":")
            _emit_value(x, indent, out)
    elif isinstance(v, list):
        if not v:
            out.append(" []\n")
            return
        out.append("\n")
        for x in v:
            _emit_item(x, indent, out)
    else:
        out.append(" " + _scalar(v) + "\n")


def _emit_value(x, indent, out):
    """Value of a mapping key at `indent`; nested blocks go at indent+2."""
    if isinstance(x, str) and "\n" in x:
        out.append(" |" + ("" if x.endswith("\n") else "-") + "\n")
        for line in x.rstrip("\n").split("\n"):
            out.append((" " * (indent + 2) + line).rstrip() + "\n")
    elif isinstance(x, list):
        # Kubernetes style: sequences under a key are not indented further.
        if not x:
            out.append(" []\n")
            return
        out.append("\n")
        for item in x:
            _emit_item(item, indent, out)
    else:
        _emit(x, indent + 2, out)


def _emit_item(x, indent, out):
    pad = " " * indent
    if isinstance(x, dict) and x:
        first = True
        for k, y in x.items():
            out.append((pad + "- " if first else pad + "  ") + _scalar(k) + ":")
            _emit_value(y, indent + 2, out)
            first = False
    elif isinstance(x, list) and x:
        out.append(pad + "-")
        _emit(x, indent + 2, out)
    else:
        out.append(pad + "-")
        _emit(x, indent + 2, out)


def to_yaml(obj):
    out = []
    for k, v in obj.items():
        out.append(_scalar(k) + ":")
        _emit_value(v, 0, out)
    return "".join(out)


# --------------------------------------------------------------------------
# Vocabulary.

TEAMS = ["payments", "search", "checkout", "ml", "vision", "speech", "ads", "risk",
         "identity", "catalog", "media", "infra", "data", "ranking", "support", "maps"]
APPS = ["api", "worker", "frontend", "gateway", "indexer", "scheduler", "trainer",
        "inference", "ingest", "exporter", "cache", "router", "notifier", "batch",
        "embedder", "reranker", "transcoder", "planner", "collector", "auth"]
ENVS = ["prod", "staging", "dev"]
REGISTRY = "registry.example.com"

DRIVER_GPU = "gpu.example.com"
DRIVER_NIC = "nic.example.com"
DRIVER_FPGA = "fpga.example.com"
GPU_MODELS = ["LATEST-GPU-MODEL", "PREVIOUS-GPU-MODEL"]

# name -> (driver, CEL selectors, what a claim may additionally ask for)
DEVICE_CLASSES = [
    ("gpu.example.com", DRIVER_GPU, ["device.driver == 'gpu.example.com'"]),
    ("gpu-latest.example.com", DRIVER_GPU,
     ["device.driver == 'gpu.example.com' && "
      "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'"]),
    ("gpu-previous.example.com", DRIVER_GPU,
     ["device.driver == 'gpu.example.com' && "
      "device.attributes['gpu.example.com'].model == 'PREVIOUS-GPU-MODEL'"]),
    ("gpu-large-memory.example.com", DRIVER_GPU,
     ["device.driver == 'gpu.example.com'",
      "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"]),
    ("nic.example.com", DRIVER_NIC, ["device.driver == 'nic.example.com'"]),
    ("nic-rdma.example.com", DRIVER_NIC,
     ["device.driver == 'nic.example.com' && device.attributes['nic.example.com'].rdma"]),
    ("fpga.example.com", DRIVER_FPGA, ["device.driver == 'fpga.example.com'"]),
]
GPU_CLASSES = [c[0] for c in DEVICE_CLASSES if c[1] == DRIVER_GPU]
NIC_CLASSES = [c[0] for c in DEVICE_CLASSES if c[1] == DRIVER_NIC]


def quota_key(cls):
    return cls + ".deviceclass.resource.k8s.io/devices"


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def hexid(self, n):
        return "".join(self.r.choice("0123456789abcdef") for _ in range(n))

    def uuid(self, prefix):
        h = self.hexid(32)
        return "%s-%s-%s-%s-%s-%s" % (prefix, h[:8], h[8:12], h[12:16], h[16:20], h[20:])

    # -- metadata ---------------------------------------------------------
    def labels(self, app, team, env, component=None):
        lab = {
            "app.kubernetes.io/name": app,
            "app.kubernetes.io/instance": "%s-%s" % (app, env),
            "app.kubernetes.io/part-of": team,
            "app.kubernetes.io/managed-by": "argocd",
            "environment": env,
        }
        if component:
            lab["app.kubernetes.io/component"] = component
        return lab

    def meta(self, name, ns=None, labels=None, annotations=None):
        m = {"name": name}
        if ns:
            m["namespace"] = ns
        if labels:
            m["labels"] = labels
        if annotations:
            m["annotations"] = annotations
        return m

    # -- pod template pieces ---------------------------------------------
    def resources(self, big=False):
        r = self.r
        cpu_m = r.choice([100, 250, 500, 1000, 2000] if not big else [2000, 4000, 8000])
        mem_mi = r.choice([128, 256, 512, 1024, 2048] if not big else [8192, 16384, 32768])
        cpu = "%dm" % cpu_m if cpu_m % 1000 else str(cpu_m // 1000)
        res = {
            "requests": {"cpu": cpu, "memory": "%dMi" % mem_mi},
            "limits": {"cpu": "%dm" % (cpu_m * 2), "memory": "%dMi" % (mem_mi * 2)},
        }
        return res, cpu_m, mem_mi * 2

    def env(self, app, ns, n):
        r = self.r
        e = [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "LOG_LEVEL", "value": r.choice(["info", "debug", "warn"])},
            {"name": "SERVICE_NAME", "value": app},
        ]
        for i in range(n):
            kind = r.random()
            if kind < 0.6:
                e.append({"name": "FEATURE_%s_%d" % (r.choice(["CACHE", "RETRY", "TRACE", "BATCH"]), i),
                          "value": r.choice(["true", "false", "10", "250ms", "https://%s.%s.svc" % (app, ns)])})
            else:
                e.append({"name": "CONFIG_%d" % i,
                          "valueFrom": {"configMapKeyRef": {"name": "%s-config" % app, "key": "app.properties"}}})
        return e

    def probe(self, path, port):
        r = self.r
        return {
            "httpGet": {"path": path, "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": r.choice([5, 10, 15, 30]),
            "periodSeconds": r.choice([5, 10, 20]),
            "timeoutSeconds": r.choice([1, 2, 5]),
            "failureThreshold": 3,
        }

    def container(self, app, ns, port, big=False, claims=None):
        r = self.r
        res, cpu_m, mem = self.resources(big)
        if claims:
            res["claims"] = [{"name": c} for c in claims]
        c = {
            "name": app,
            "image": "%s/%s/%s:v%d.%d.%d" % (REGISTRY, ns, app, r.randint(1, 4), r.randint(0, 30), r.randint(0, 9)),
            "imagePullPolicy": "IfNotPresent",
            "args": ["--port=%d" % port, "--metrics-port=9090", "--config=/etc/%s/app.properties" % app],
            "ports": [
                {"name": "http", "containerPort": port, "protocol": "TCP"},
                {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
            ],
            "env": self.env(app, ns, r.randint(2, 10)),
            "resources": res,
            "livenessProbe": self.probe("/healthz", "http"),
            "readinessProbe": self.probe("/readyz", "http"),
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "runAsNonRoot": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/%s" % app, "readOnly": True},
                {"name": "tmp", "mountPath": "/tmp"},
            ],
        }
        return c, cpu_m, mem

    def pod_spec(self, app, ns, sa, port, big=False, claim_refs=None):
        """claim_refs: list of (pod claim name, {"resourceClaimTemplateName"|"resourceClaimName": x})."""
        r = self.r
        names = [n for n, _ in (claim_refs or [])]
        c, cpu_m, mem = self.container(app, ns, port, big, names)
        spec = {
            "serviceAccountName": sa,
            "securityContext": {"runAsUser": 10000 + r.randint(0, 999), "fsGroup": 2000,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "terminationGracePeriodSeconds": r.choice([30, 60]),
            "containers": [c],
            "volumes": [
                {"name": "config", "configMap": {"name": "%s-config" % app}},
                {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
            ],
        }
        if r.random() < 0.4:
            spec["initContainers"] = [{
                "name": "wait-deps",
                "image": "%s/tools/wait-for:1.4.0" % REGISTRY,
                "args": ["--timeout=120s", "tcp://postgres.%s.svc:5432" % ns],
                "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                    "capabilities": {"drop": ["ALL"]}},
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                              "limits": {"cpu": "50m", "memory": "32Mi"}},
            }]
        if r.random() < 0.5:
            spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                    "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}}}}]}}
        if r.random() < 0.3:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": ns, "effect": "NoSchedule"}]
        if claim_refs:
            spec["resourceClaims"] = [dict({"name": n}, **ref) for n, ref in claim_refs]
            spec["tolerations"] = spec.get("tolerations", []) + [
                {"key": "gpu.example.com/present", "operator": "Exists", "effect": "NoSchedule"}]
        return spec, cpu_m, mem

    # -- DRA ----------------------------------------------------------------
    def device_request(self, req_name, cls, count):
        exactly = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
        if cls in ("gpu.example.com", "gpu-large-memory.example.com") and self.r.random() < 0.5:
            exactly["selectors"] = [{"cel": {"expression":
                "device.attributes['gpu.example.com'].model == '%s'" % self.r.choice(GPU_MODELS)}}]
        return {"name": req_name, "exactly": exactly}

    def claim_spec(self, devices):
        """devices: list of (request name, class, count)."""
        return {"devices": {"requests": [self.device_request(n, c, k) for n, c, k in devices]}}


class Repo:
    def __init__(self, out, seed):
        self.out = out
        self.g = Gen(seed)
        self.kinds = Counter()
        self.files = 0
        self.bytes = 0
        self.objects = 0
        self.demand = Counter()  # GPU model ("ANY" when unconstrained) or NIC class -> devices

    # Each write_* counts the objects it writes.
    def _write(self, rel, text):
        path = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = text.encode("utf-8")
        with open(path, "wb") as f:
            f.write(data)
        self.files += 1
        self.bytes += len(data)

    def _count(self, objs):
        for o in objs:
            self.kinds[o["kind"]] += 1
        self.objects += len(objs)

    def write_yaml(self, rel, objs):
        self._count(objs)
        parts = []
        for i, o in enumerate(objs):
            head = "---\n" if (i > 0 or self.g.r.random() < 0.3) else ""
            parts.append(head + to_yaml(o))
        self._write(rel, "".join(parts))

    def write_json(self, rel, obj):
        self._count([obj])
        self._write(rel, json.dumps(obj, indent=2) + "\n")

    def write_list(self, rel, objs, as_json):
        self._count(objs)
        lst = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objs}
        self._write(rel, json.dumps(lst, indent=2) + "\n" if as_json else to_yaml(lst))

    def write_objs(self, dirrel, objs, layout):
        """layout: 'split' (file per object, some JSON), 'bundle' (one multi-doc
        file), 'list' (a kind: List)."""
        r = self.g.r
        if layout == "split":
            for o in objs:
                base = "%s-%s" % (o["kind"].lower(), o["metadata"]["name"])
                if r.random() < 0.15:
                    self.write_json(os.path.join(dirrel, base + ".json"), o)
                else:
                    self.write_yaml(os.path.join(dirrel, base + r.choice([".yaml", ".yaml", ".yml"])), [o])
        elif layout == "list":
            as_json = r.random() < 0.5
            self.write_list(os.path.join(dirrel, "list.json" if as_json else "list.yaml"), objs, as_json)
        else:
            self.write_yaml(os.path.join(dirrel, "manifests.yaml"), objs)


# --------------------------------------------------------------------------
# The cluster-wide part: DRA driver, device classes, slices, cluster RBAC.

def cluster_objects(repo, per_model):
    g = repo.g
    r = g.r
    base = "clusters/prod-eu-1/infra"
    # Device classes: one file each.
    for name, driver, exprs in DEVICE_CLASSES:
        dc = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
              "metadata": g.meta(name, labels={"app.kubernetes.io/part-of": "dra"}),
              "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]}}
        repo.write_yaml("%s/dra/deviceclasses/%s.yaml" % (base, name), [dc])

    # The DRA example driver (kubelet plugin) and its RBAC.
    ns = "dra-example-driver"
    lab = {"app.kubernetes.io/name": "dra-example-driver", "app.kubernetes.io/component": "kubeletplugin"}
    objs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": g.meta(ns, labels={"pod-security.kubernetes.io/enforce": "privileged"})},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": g.meta("dra-example-driver-service-account", ns)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": g.meta("dra-example-driver-role"),
         "rules": [
             {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
             {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
             {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
              "verbs": ["list", "watch", "create", "update", "delete"]},
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": g.meta("dra-example-driver-role-binding"),
         "subjects": [{"kind": "ServiceAccount", "name": "dra-example-driver-service-account", "namespace": ns}],
         "roleRef": {"kind": "ClusterRole", "name": "dra-example-driver-role", "apiGroup": "rbac.authorization.k8s.io"}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": g.meta("dra-example-driver-kubeletplugin", ns, labels=lab),
         "spec": {
             "selector": {"matchLabels": lab},
             "updateStrategy": {"type": "RollingUpdate"},
             "template": {
                 "metadata": {"labels": lab},
                 "spec": {
                     "priorityClassName": "system-node-critical",
                     "serviceAccountName": "dra-example-driver-service-account",
                     "containers": [{
                         "name": "plugin",
                         "image": "%s/dra-example-driver:v0.2.0" % REGISTRY,
                         "command": ["dra-example-kubeletplugin"],
                         "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                                       "limits": {"cpu": "200m", "memory": "128Mi"}},
                         "env": [
                             {"name": "CDI_ROOT", "value": "/var/run/cdi"},
                             {"name": "KUBELET_REGISTRAR_DIRECTORY_PATH", "value": "/var/lib/kubelet/plugins_registry"},
                             {"name": "KUBELET_PLUGINS_DIRECTORY_PATH", "value": "/var/lib/kubelet/plugins"},
                             {"name": "NUM_DEVICES", "value": "8"},
                             {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                             {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                         ],
                         "securityContext": {"privileged": True},
                         "livenessProbe": {"grpc": {"port": 51515, "service": "liveness"},
                                           "failureThreshold": 3, "periodSeconds": 10},
                         "volumeMounts": [
                             {"name": "plugins-registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
                             {"name": "plugins", "mountPath": "/var/lib/kubelet/plugins"},
                             {"name": "cdi", "mountPath": "/var/run/cdi"},
                         ],
                     }],
                     "volumes": [
                         {"name": "plugins-registry", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}},
                         {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/plugins"}},
                         {"name": "cdi", "hostPath": {"path": "/var/run/cdi", "type": "DirectoryOrCreate"}},
                     ],
                     "tolerations": [{"key": "gpu.example.com/present", "operator": "Exists", "effect": "NoSchedule"}],
                 },
             },
         }},
    ]
    repo.write_yaml("%s/dra/driver/dra-example-driver.yaml" % base, objs)

    # ClusterRoles: a few aggregated viewer/editor roles.
    crs = []
    for team in TEAMS:
        crs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": g.meta("%s-viewer" % team, labels={"rbac.example.com/aggregate-to-view": "true"}),
                    "rules": [
                        {"apiGroups": ["", "apps", "batch"], "resources": ["pods", "deployments", "jobs", "services", "configmaps"],
                         "verbs": ["get", "list", "watch"]},
                        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims", "resourceclaimtemplates", "deviceclasses"],
                         "verbs": ["get", "list", "watch"]},
                    ]})
    repo.write_yaml("%s/rbac/cluster-roles.yaml" % base, crs)

    # ResourceSlices: one per node per driver; 8 GPUs, 2 NICs, some FPGAs.
    models = []
    for m, n in zip(GPU_MODELS, per_model):
        models.extend([m] * n)
    for i, gpu_model in enumerate(models):
        node = "node-%04d" % i
        slices = []
        gmem = "80Gi" if gpu_model == GPU_MODELS[0] else "40Gi"
        devs = []
        for d in range(8):
            devs.append({
                "name": "gpu-%d" % d,
                "attributes": {
                    "index": {"int": d},
                    "uuid": {"string": g.uuid("gpu")},
                    "model": {"string": gpu_model},
                    "driverVersion": {"version": "1.0.0"},
                    "resource.kubernetes.io/pcieRoot": {"string": "pci0000:%02x" % (d // 4)},
                },
                "capacity": {"memory": {"value": gmem}},
            })
        slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                       "metadata": g.meta("%s-gpu.example.com-%s" % (node, g.hexid(5))),
                       "spec": {"driver": DRIVER_GPU, "nodeName": node,
                                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                "devices": devs}})
        nics = []
        for d in range(2):
            nics.append({"name": "nic-%d" % d, "attributes": {
                "rdma": {"bool": d == 0},
                "speedGbps": {"int": 200},
                "macAddress": {"string": ":".join(g.hexid(2) for _ in range(6))},
            }})
        slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                       "metadata": g.meta("%s-nic.example.com-%s" % (node, g.hexid(5))),
                       "spec": {"driver": DRIVER_NIC, "nodeName": node,
                                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                "devices": nics}})
        if i % 4 == 0:
            slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                           "metadata": g.meta("%s-fpga.example.com-%s" % (node, g.hexid(5))),
                           "spec": {"driver": DRIVER_FPGA, "nodeName": node,
                                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                    "devices": [{"name": "fpga-%d" % d, "attributes": {"family": {"string": "agilex"}}}
                                                for d in range(2)]}})
        rel = "clusters/prod-eu-1/infra/dra/resourceslices/%s" % node
        if i % 5 == 0:
            for s in slices:
                repo.write_json("%s-%s.json" % (rel, s["spec"]["driver"].split(".")[0]), s)
        elif i % 97 == 1:
            repo.write_list(rel + ".yaml", slices, False)
        else:
            repo.write_yaml(rel + ".yaml", slices)


# --------------------------------------------------------------------------
# A tenant namespace with a handful of applications.

def namespace_objects(repo, idx):
    g = repo.g
    r = g.r
    team = TEAMS[idx % len(TEAMS)]
    env = ENVS[(idx // len(TEAMS)) % len(ENVS)]
    ns = "%s-%s-%03d" % (team, env, idx)
    cluster = "prod-eu-1" if env == "prod" else "nonprod-eu-1"
    root = "clusters/%s/tenants/%s/%s" % (cluster, team, ns)
    gpu_ns = r.random() < 0.35
    layout_ns = r.choices(["app-files", "bundle", "split"], [0.25, 0.73, 0.02])[0]

    app_objs = []         # (app name, [objects])
    claim_counts = Counter()  # device class -> devices the namespace may use at once
    cpu_total = 0
    mem_total = 0
    pods_total = 0

    sa_names = []
    napps = r.randint(3, 8)
    used = set()
    for a in range(napps):
        app = r.choice(APPS)
        while app in used:
            app = r.choice(APPS)
        used.add(app)
        objs = []
        port = r.choice([8080, 8443, 3000, 5000, 9000])
        lab = g.labels(app, team, env, "server")
        sa = app
        sa_names.append(sa)
        objs.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": g.meta(sa, ns, labels=lab)})
        # ConfigMap with a realistic properties file.
        props = "\n".join("%s.%s=%s" % (app, k, r.choice(["true", "false", str(r.randint(1, 5000)), "https://%s.example.com" % team]))
                          for k in r.sample(["timeout", "retries", "pool.size", "cache.ttl", "batch.size", "endpoint",
                                             "tracing.enabled", "metrics.enabled", "queue", "region", "shards",
                                             "max.inflight", "compression", "tls.enabled"], r.randint(5, 12))) + "\n"
        cm_data = {"app.properties": props, "LOG_FORMAT": "json"}
        if r.random() < 0.3:
            cm_data["logging.yaml"] = "level: info\nformat: json\noutputs:\n  - stdout\nsampling:\n  initial: 100\n  thereafter: 100\n"
        objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": g.meta("%s-config" % app, ns, labels=lab),
                     "data": cm_data})

        claim_refs = None
        kind_roll = r.random()
        wants_gpu = gpu_ns and app in ("trainer", "inference", "embedder", "reranker", "transcoder", "batch") or \
            (gpu_ns and r.random() < 0.3)
        if wants_gpu:
            cls = r.choice(GPU_CLASSES)
            ngpu = r.choice([1, 1, 2, 4])
            devs = [("gpu", cls, ngpu)]
            if r.random() < 0.2:
                devs.append(("nic", r.choice(NIC_CLASSES), 1))
            if r.random() < 0.7:
                tmpl = "%s-gpu" % app
                objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                             "metadata": g.meta(tmpl, ns, labels=lab),
                             "spec": {"spec": g.claim_spec(devs)}})
                claim_refs = [("gpu", {"resourceClaimTemplateName": tmpl})]
                per_pod = devs
                shared = False
            else:
                claim = "%s-shared-gpu" % app
                objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                             "metadata": g.meta(claim, ns, labels=lab),
                             "spec": g.claim_spec(devs)})
                claim_refs = [("gpu", {"resourceClaimName": claim})]
                per_pod = devs
                shared = True
        big = wants_gpu

        spec, cpu_m, mem = g.pod_spec(app, ns, sa, port, big, claim_refs)
        tmpl_meta = {"labels": lab, "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                                                    "checksum/config": g.hexid(64)}}
        if kind_roll < 0.62:
            replicas = r.choice([1, 2, 3, 3, 5]) if not wants_gpu else r.choice([1, 2])
            objs.append({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": g.meta(app, ns, labels=lab, annotations={"argocd.argoproj.io/sync-wave": "1"}),
                         "spec": {"replicas": replicas, "revisionHistoryLimit": 5,
                                  "selector": {"matchLabels": {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": "%s-%s" % (app, env)}},
                                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                                  "template": {"metadata": tmpl_meta, "spec": spec}}})
            pods = replicas + 1  # surge
        elif kind_roll < 0.77:
            replicas = r.choice([1, 3])
            sts_spec = {"serviceName": app, "replicas": replicas,
                        "selector": {"matchLabels": {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": "%s-%s" % (app, env)}},
                        "template": {"metadata": tmpl_meta, "spec": spec},
                        "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                                  "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast-ssd",
                                                           "resources": {"requests": {"storage": r.choice(["10Gi", "50Gi", "200Gi"])}}}}]}
            spec["containers"][0]["volumeMounts"].append({"name": "data", "mountPath": "/var/lib/%s" % app})
            objs.append({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": g.meta(app, ns, labels=lab), "spec": sts_spec})
            pods = replicas
        elif kind_roll < 0.9:
            par = r.choice([1, 2, 4])
            for p in spec["containers"]:
                p.pop("livenessProbe", None)
                p.pop("readinessProbe", None)
            spec["restartPolicy"] = "Never"
            objs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": g.meta(app, ns, labels=lab),
                         "spec": {"parallelism": par, "completions": par * r.choice([1, 4]), "backoffLimit": 3,
                                  "ttlSecondsAfterFinished": 86400, "template": {"metadata": tmpl_meta, "spec": spec}}})
            pods = par
        else:
            for p in spec["containers"]:
                p.pop("livenessProbe", None)
                p.pop("readinessProbe", None)
            spec["restartPolicy"] = "OnFailure"
            objs.append({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": g.meta(app, ns, labels=lab),
                         "spec": {"schedule": "%d %s * * *" % (r.randint(0, 59), r.choice(["*", "*/6", "2", "3"])),
                                  "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                                  "jobTemplate": {"spec": {"backoffLimit": 2, "template": {"metadata": tmpl_meta, "spec": spec}}}}})
            pods = 1
        cpu_total += cpu_m * pods
        mem_total += mem * pods
        pods_total += pods
        if claim_refs:
            for _, cls, k in per_pod:
                claim_counts[cls] += k * (1 if shared else pods)
            # Cluster-wide demand by GPU model / NIC kind, to size the inventory.
            cspec = objs[2]["spec"] if shared else objs[2]["spec"]["spec"]
            for req in cspec["devices"]["requests"]:
                ex = req["exactly"]
                cls = ex["deviceClassName"]
                if cls in GPU_CLASSES:
                    model = "ANY"
                    if cls == "gpu-latest.example.com":
                        model = GPU_MODELS[0]
                    elif cls == "gpu-previous.example.com":
                        model = GPU_MODELS[1]
                    for sel in ex.get("selectors", []):
                        for m in GPU_MODELS:
                            if "'%s'" % m in sel["cel"]["expression"]:
                                model = m
                    repo.demand[model] += ex["count"] * (1 if shared else pods)
                else:
                    repo.demand[cls] += ex["count"] * (1 if shared else pods)

        if objs[-1]["kind"] in ("Deployment", "StatefulSet"):
            objs.append({"apiVersion": "v1", "kind": "Service", "metadata": g.meta(app, ns, labels=lab),
                         "spec": {"type": "ClusterIP",
                                  "selector": {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": "%s-%s" % (app, env)},
                                  "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                                            {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}]}})
        app_objs.append((app, objs))

    # Namespace-level objects.
    ns_objs = [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": g.meta(ns, labels={"team": team, "environment": env,
                                        "pod-security.kubernetes.io/enforce": "restricted"})},
    ]
    hard = {
        "requests.cpu": "%dm" % max(4000, cpu_total * 2),
        "requests.memory": "%dMi" % max(8192, mem_total * 2),
        "limits.cpu": "%dm" % max(8000, cpu_total * 4),
        "limits.memory": "%dMi" % max(16384, mem_total * 2),
        "pods": str(max(20, pods_total * 2)),
        "services": "50",
        "configmaps": "100",
    }
    for cls, _, _ in DEVICE_CLASSES:
        if claim_counts[cls]:
            hard[quota_key(cls)] = str(claim_counts[cls] * 2)
        elif gpu_ns and cls in GPU_CLASSES:
            hard[quota_key(cls)] = "0" if r.random() < 0.3 else "4"
    ns_objs.append({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": g.meta("%s-quota" % ns, ns),
                    "spec": {"hard": hard}})
    ns_objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": g.meta("%s-deployer" % team, ns),
                    "rules": [
                        {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"],
                         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["get", "list", "watch", "create", "delete"]},
                        {"apiGroups": [""], "resources": ["configmaps", "services", "serviceaccounts"],
                         "verbs": ["get", "list", "watch", "create", "update", "patch"]},
                        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims", "resourceclaimtemplates"],
                         "verbs": ["get", "list", "watch", "create", "delete"]},
                    ]})
    ns_objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": g.meta("%s-deployer" % team, ns),
                    "subjects": [{"kind": "ServiceAccount", "name": sa_names[0], "namespace": ns},
                                 {"kind": "Group", "name": "team-%s" % team, "apiGroup": "rbac.authorization.k8s.io"}],
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "%s-deployer" % team}})
    ns_objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": g.meta("%s-viewers" % team, ns),
                    "subjects": [{"kind": "Group", "name": "team-%s-readonly" % team, "apiGroup": "rbac.authorization.k8s.io"}],
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "%s-viewer" % team}})

    # Write.
    if layout_ns == "bundle":
        everything = list(ns_objs)
        for _, objs in app_objs:
            everything.extend(objs)
        if r.random() < 0.04:
            repo.write_objs(root, everything, "list")
        else:
            repo.write_objs(root, everything, "bundle")
    elif layout_ns == "split":
        repo.write_objs(root, ns_objs, "split")
        for app, objs in app_objs:
            repo.write_objs(os.path.join(root, app), objs, "split")
    else:
        repo.write_yaml(os.path.join(root, "namespace.yaml"), ns_objs)
        for app, objs in app_objs:
            if r.random() < 0.06:
                repo.write_objs(os.path.join(root, app), objs, "split")
            else:
                repo.write_yaml(os.path.join(root, app + ".yaml"), objs)


def parse_args(argv, doc, name, min_count=1):
    """OUT_DIR [COUNT [SEED]] [--manifest PATH]: (out, count, seed, manifest) with OUT_DIR
    created, or the exit code (an int) after --help or an error.  bench/gen-platform.py's too."""
    args = []
    manifest = None
    i = 1
    while i < len(argv):
        if argv[i] == "--manifest" and i + 1 < len(argv):
            manifest = argv[i + 1]
            i += 2
            continue
        if argv[i] in ("-h", "--help"):
            print(doc.strip())
            return 0
        args.append(argv[i])
        i += 1
    if not 1 <= len(args) <= 3:
        sys.stderr.write("usage: %s OUT_DIR [COUNT [SEED]] [--manifest PATH]\n" % name)
        return 2
    out = args[0].rstrip("/")
    try:
        count = int(args[1]) if len(args) > 1 else 50000
        seed = int(args[2]) if len(args) > 2 else 1
    except ValueError:
        sys.stderr.write("%s: COUNT and SEED must be integers\n" % name)
        return 2
    if count < min_count:
        sys.stderr.write("%s: COUNT must be at least %d\n" % (name, min_count))
        return 2
    if os.path.exists(out) and os.listdir(out):
        sys.stderr.write("%s: %s exists and is not empty\n" % (name, out))
        return 2
    os.makedirs(out, exist_ok=True)
    return out, count, seed, manifest or out + ".manifest.json"


def main(argv):
    parsed = parse_args(argv, __doc__, "gen-repo.py")
    if isinstance(parsed, int):
        return parsed
    out, count, seed, manifest = parsed

    repo = Repo(out, seed)
    idx = 0
    while idx == 0 or repo.objects < 0.9 * count:
        namespace_objects(repo, idx)
        idx += 1
    # Inventory: node pools per GPU model with 1.5 times the devices that the
    # claims can ask for at once (unconstrained requests counted against both
    # pools), so that no class runs short; the demand so far is scaled up to
    # cover the namespaces still to come.
    scale = max(1.0, count / float(repo.objects))
    d = Counter({k: v * scale for k, v in repo.demand.items()})
    per_model = [int(1.5 * (d[m] + d["ANY"]) / 8) + 1 for m in GPU_MODELS]
    nic_nodes = int(1.5 * max(d["nic-rdma.example.com"], (d["nic.example.com"] + d["nic-rdma.example.com"]) / 2.0)) + 1
    extra = max(0, nic_nodes - sum(per_model))
    per_model[0] += extra
    nodes = sum(per_model)
    cluster_objects(repo, per_model)
    while repo.objects < count:
        namespace_objects(repo, idx)
        idx += 1

    summary = {"objects": repo.objects, "files": repo.files, "bytes": repo.bytes,
               "namespaces": idx, "nodes": nodes,
               "nodes_by_gpu_model": dict(zip(GPU_MODELS, per_model)),
               "device_demand": dict(sorted(repo.demand.items())), "count_requested": count, "seed": seed,
               "kinds": dict(sorted(repo.kinds.items()))}
    with open(manifest, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    w = max(len(k) for k in repo.kinds)
    print("generated %s (seed %d)" % (out, seed))
    for k, n in sorted(repo.kinds.items(), key=lambda kv: (-kv[1], kv[0])):
        print("  %-*s %7d" % (w, k, n))
    print("  %-*s %7d objects in %d files, %d bytes (%.1f MiB)" % (
        w, "total", repo.objects, repo.files, repo.bytes, repo.bytes / 1048576.0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
