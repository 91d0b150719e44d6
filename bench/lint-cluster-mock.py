#!/usr/bin/env python3
# A read-only mock API server for bench/lint-cluster-bench.sh: N Nodes, each with a
# ResourceSlice of 8 GPUs; CLAIMS allocated ResourceClaims, claim i holding all of node i's
# GPUs, owned by Pod i (its ReplicaSet rs<i%50>); LIST pages by limit/continue as
# kube-apiserver does.  Usage: lint-cluster-mock.py N PORT CLAIMS
# Or: lint-cluster-mock.py --dump FILE PORT serves the objects of a dump (`bench/ctl-load.py
# dump FILE`) by kind instead, and holds every WATCH open without an event: what a quiet
# cluster of them shows a watching `dra-doctor webhook` (bench/webhook-mem.sh).
import json, sys, http.server, urllib.parse, time
DUMP = sys.argv[1] == "--dump"
if DUMP:
    port = int(sys.argv[3]); N = CLAIMS = 0
else:
    N = int(sys.argv[1]); port = int(sys.argv[2]); CLAIMS = int(sys.argv[3])
# A Node as a kubelet reports it: its images and managed fields are most of it.
IMAGES = [{"names": [f"registry.example.com/team-{k}/app@sha256:{k:064x}", f"registry.example.com/team-{k}/app:v{k}"], "sizeBytes": 100000000 + k} for k in range(40)]
def node(i): return {"metadata":{"name":f"n{i}","labels":{"kubernetes.io/hostname":f"n{i}"},
                                 "managedFields":[{"manager":"kubelet","operation":"Update","fieldsV1":{"f:status":{"f:images":{}}}}]},
                     "status":{"allocatable":{"cpu":"64"},"images":IMAGES}}
def dev(j): return {"name":f"gpu-{j}","attributes":{"model":{"string":"A"},"index":{"int":j}},"capacity":{"memory":{"value":"80Gi"}}}
def slice_(i): return {"metadata":{"name":f"n{i}-gpu"},"spec":{"driver":"gpu.example.com","nodeName":f"n{i}","pool":{"name":f"n{i}","generation":1,"resourceSliceCount":1},"devices":[dev(j) for j in range(8)]}}
def claim(i):  # holds all 8 gpus of node i
    return {"metadata":{"name":f"c{i}","namespace":"ns","ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":f"p{i}","uid":"u","controller":True}]},
            "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com","count":8}}]}},
            "status":{"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.example.com","pool":f"n{i}","device":f"gpu-{j}"} for j in range(8)]},
                      "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":[f"n{i}"]}]}]}}}}
def pod(i): return {"metadata":{"name":f"p{i}","namespace":"ns","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":f"rs{i%50}","uid":"u","controller":True}]},"spec":{"nodeName":f"n{i}","containers":[{"name":"c","image":"x"}]},"status":{"phase":"Running"}}
lists = {
 "/api/v1/nodes": ("Node","v1",[node(i) for i in range(N)]),
 "/apis/resource.k8s.io/v1/resourceslices": ("ResourceSlice","resource.k8s.io/v1",[slice_(i) for i in range(N)]),
 "/apis/resource.k8s.io/v1/deviceclasses": ("DeviceClass","resource.k8s.io/v1",[{"metadata":{"name":"gpu.example.com"},"spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.example.com'"}}]}}]),
 "/apis/resource.k8s.io/v1/resourceclaims": ("ResourceClaim","resource.k8s.io/v1",[claim(i) for i in range(CLAIMS)]),
 "/apis/resource.k8s.io/v1/resourceclaimtemplates": ("ResourceClaimTemplate","resource.k8s.io/v1",[]),
 "/api/v1/pods": ("Pod","v1",[pod(i) for i in range(N)]),
 "/apis/apps/v1/replicasets": ("ReplicaSet","apps/v1",[]),
 "/apis/batch/v1/jobs": ("Job","batch/v1",[]),
}
if DUMP:
    PATHS = {"DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
             "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
             "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims",
             "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/resourceclaimtemplates",
             "ResourceQuota": "/api/v1/resourcequotas", "DaemonSet": "/apis/apps/v1/daemonsets",
             "Pod": "/api/v1/pods", "Node": "/api/v1/nodes"}
    lists = {p: (k, "v1", []) for k, p in PATHS.items()}
    for i, o in enumerate(json.load(open(sys.argv[2]))["items"]):
        if o.get("kind") in PATHS:
            o.setdefault("metadata", {}).update(resourceVersion="1", uid="u%d" % i)
            lists[PATHS[o["kind"]]][2].append(o)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code); self.send_header("Content-Type","application/json"); self.send_header("Content-Length",str(len(b))); self.end_headers(); self.wfile.write(b)
    def do_GET(self):
        u = urllib.parse.urlparse(self.path); q = urllib.parse.parse_qs(u.query)
        if u.path == "/version": return self.send(200, {"gitVersion":"v1.37.2"})
        if u.path == "/apis/resource.k8s.io": return self.send(200, {"versions":[{"version":"v1"}]})
        if u.path == "/apis/resource.k8s.io/v1": return self.send(200, {"resources":[{"name":"resourceslices"}]})
        if q.get("watch", [""])[0] in ("1", "true"):
            self.send_response(200); self.send_header("Content-Type","application/json")
            self.send_header("Transfer-Encoding","chunked"); self.end_headers(); self.wfile.flush()
            try:
                while True: time.sleep(3600)
            except Exception: return
        if u.path in lists:
            kind, av, items = lists[u.path]
            lim = int(q.get("limit",["0"])[0]) or len(items) or 1
            start = int(q.get("continue",["0"])[0])
            page = items[start:start+lim]
            meta = {"resourceVersion":"1"}
            if start+lim < len(items): meta["continue"] = str(start+lim)
            return self.send(200, {"kind":kind+"List","apiVersion":av,"metadata":meta,"items":page})
        self.send(404, {"kind":"Status","code":404})
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
