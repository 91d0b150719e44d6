#!/usr/bin/env python3
"""Convert a Kubernetes OpenAPI v2 spec (swagger.json) into standalone JSON
schemas laid out the way kubeconform's -schema-location expects.

Usage: openapi2kubeconform.py SWAGGER_JSON OUT_DIR K8S_VERSION

Writes, for every top-level kind in the spec (a definition carrying exactly one
x-kubernetes-group-version-kind):

  OUT_DIR/v<K8S_VERSION>-standalone/<kind><suffix>.json         (lenient)
  OUT_DIR/v<K8S_VERSION>-standalone-strict/<kind><suffix>.json  (strict)

where <kind> is the lower-cased kind and <suffix> is "-<version>" for the core
group or "-<first label of group>-<version>" otherwise, which is the naming
kubeconform's registry uses ({{ .ResourceKind }}{{ .KindSuffix }}.json):
deployment-apps-v1.json, service-v1.json, deviceclass-resource-v1.json,
rolebinding-rbac-v1.json.  Then run kubeconform with
  -schema-location OUT_DIR -kubernetes-version K8S_VERSION

The conversion follows what the commonly used kubernetes-json-schema sets do:
every $ref is inlined ("standalone"; a recursive reference becomes {}),
apiVersion and kind are pinned with an enum, int-or-string fields accept a
string or an integer, resource.Quantity accepts a string or a number, optional
scalar fields also accept null, and the strict variant adds
additionalProperties: false to every object schema that lists properties and
does not say otherwise.  Standard library only.
"""
import json
import os
import sys

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


def kind_file_name(group, version, kind):
    suffix = "-" + version.lower() if not group else \
        "-" + group.split(".")[0].lower() + "-" + version.lower()
    return kind.lower() + suffix + ".json"


class Converter:
    def __init__(self, definitions, strict):
        self.defs = definitions
        self.strict = strict

    def convert(self, node, stack, required_here=True):
        """Returns a converted deep copy of node with every $ref inlined."""
        if isinstance(node, list):
            return [self.convert(x, stack) for x in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in stack:  # recursive type: accept anything below here
                return {}
            if name == QUANTITY:
                return {"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]}
            target = self.defs.get(name)
            if target is None:
                return {}
            out = self.convert(target, stack + (name,), required_here)
            if "description" in node and isinstance(out, dict):
                out = dict(out)
                out["description"] = node["description"]
            return out
        if node.get("format") == "int-or-string":
            return {"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]}
        out = {}
        req = set(node.get("required", []))
        for k, v in node.items():
            if k.startswith("x-kubernetes-"):
                continue
            if k == "properties" and isinstance(v, dict):
                out[k] = {p: self.convert(s, stack, p in req) for p, s in v.items()}
            elif k in ("items", "additionalProperties", "allOf", "anyOf", "oneOf", "not"):
                out[k] = self.convert(v, stack)
            elif k == "type" and isinstance(v, str) and v != "object" and not required_here:
                out[k] = [v, "null"]
            else:
                out[k] = v
        if self.strict and "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: %s SWAGGER_JSON OUT_DIR K8S_VERSION\n" % argv[0])
        return 2
    swagger, out_dir, k8s_version = argv[1], argv[2], argv[3].lstrip("v")
    with open(swagger, encoding="utf-8") as f:
        spec = json.load(f)
    defs = spec["definitions"]
    written = 0
    for strict in (False, True):
        sub = os.path.join(out_dir, "v%s-standalone%s" % (k8s_version, "-strict" if strict else ""))
        os.makedirs(sub, exist_ok=True)
        conv = Converter(defs, strict)
        for name in sorted(defs):
            gvks = defs[name].get("x-kubernetes-group-version-kind")
            if not gvks or len(gvks) != 1:
                continue
            gvk = gvks[0]
            group, version, kind = gvk.get("group", ""), gvk["version"], gvk["kind"]
            schema = conv.convert(defs[name], (name,))
            props = schema.setdefault("properties", {})
            api_version = version if not group else group + "/" + version
            props["apiVersion"] = {"type": ["string", "null"], "enum": [api_version],
                                   "description": props.get("apiVersion", {}).get("description", "")}
            props["kind"] = {"type": ["string", "null"], "enum": [kind],
                             "description": props.get("kind", {}).get("description", "")}
            path = os.path.join(sub, kind_file_name(group, version, kind))
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(schema, f, indent=2, sort_keys=True)
                f.write("\n")
            os.replace(tmp, path)
            written += 1
    print("wrote %d schema files under %s" % (written, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
