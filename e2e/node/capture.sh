#!/bin/sh
# Captures what the controller sees of a DRA scenario on a running cluster, as the
# fixtures of tests/unit/test_evidence.c (tests/data/real-node/): the objects of namespace
# NS, the cluster-scoped ones the rules read, and the Node with the agent's annotation,
# as one JSON array.  managedFields, last-applied annotations and other noise are dropped;
# statuses, Events and every message are kept word for word.
#
#   e2e/node/capture.sh NS OUT.json [NOTE]      (KUBECONFIG of the cluster)
set -eu
ns=${1:?usage: capture.sh NS OUT.json [NOTE]}
out=${2:?usage: capture.sh NS OUT.json [NOTE]}
note=${3:-}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    kubectl get pods,events,resourceclaims,resourcequotas,daemonsets,serviceaccounts -n "$ns" -o json
    kubectl get nodes,deviceclasses,resourceslices -o json
    kubectl get clusterroles,clusterrolebindings -o json
} >"$tmp"
python3 - "$tmp" "$out" "$ns" "$note" <<'EOF'
import json, sys
src, out, ns, note = sys.argv[1:5]
dec = json.JSONDecoder()
text = open(src).read()
items, i = [], 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    doc, i = dec.raw_decode(text, i)
    items += doc.get("items", [])
def keep(o):
    k = o.get("kind")
    if k in ("ClusterRole", "ClusterRoleBinding"):
        # the driver's, not the system's hundreds
        n = o["metadata"]["name"]
        return not n.startswith("system:") and n not in ("admin", "edit", "view", "cluster-admin")
    return True
def ours(o):
    # dra-doctor's own output (its Events, its annotations on pods) is not evidence
    return o.get("kind") == "Event" and (o.get("reportingComponent") == "dra-doctor" or
                                         o.get("source", {}).get("component") == "dra-doctor")
res = []
for o in items:
    if not keep(o) or ours(o):
        continue
    m = o.get("metadata", {})
    for f in ("managedFields", "resourceVersion", "selfLink", "generation"):
        m.pop(f, None)
    a = m.get("annotations", {})
    a.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if o.get("kind") == "Pod":
        for k in [k for k in a if k.startswith("dra-doctor.io/")]:
            del a[k]
    if not a:
        m.pop("annotations", None)
    res.append(o)
doc = {"note": note, "objects": res}
json.dump(doc, open(out, "w"), indent=1, sort_keys=True)
print(f"{out}: {len(res)} objects")
EOF
