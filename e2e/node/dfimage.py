#!/usr/bin/env python3
"""dfimage.py - dra-doctor's image from its Dockerfile, without a Docker engine.

  dfimage.py DOCKERFILE OUT.tar --tag NAME:TAG --artifact STAGEPATH=HOSTPATH...

Follows the Dockerfile's runtime (last) stage instruction by instruction:
  FROM debian:<codename>-slim   the host must be that Debian release: its
                                 installed packages are the ones apt would put in
  RUN apt-get ... install PKG   PKG and what they depend on (Depends and
                                 Pre-Depends, as installed on the host) are copied
                                 from the host's dpkg file lists; documentation
                                 is left out as in -slim
  COPY --from=STAGE SRC DST     SRC is the build stage's output: --artifact says
                                 which host file it is (the build stage's steps,
                                 scripts/deps.sh and `make dra-doctor`, are the
                                 Makefile's: tests/unit/test_dockerfile.c)
  USER, ENTRYPOINT, CMD, ENV, WORKDIR   into the image config
Anything else in the runtime stage is an error: the image would silently differ
from the Dockerfile's.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mkimage  # noqa: E402

# What -slim images drop, and what no binary of the image reads.
SKIP = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/lintian/",
        "/usr/share/locale/", "/usr/share/bug/")


def die(msg):
    sys.exit(f"dfimage: {msg}")


def instructions(path):
    """(keyword, args) of every instruction, continuation lines joined."""
    out, cur = [], ""
    with open(path) as f:
        for line in f:
            s = line.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if cur and s.lstrip().startswith("#"):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            kw, _, args = cur.strip().partition(" ")
            out.append((kw.upper(), args.strip()))
            cur = ""
    return out


def runtime_stage(ins):
    starts = [i for i, (kw, _) in enumerate(ins) if kw == "FROM"]
    if not starts:
        die("no FROM")
    return ins[starts[-1]:]


def host_codename():
    with open("/etc/os-release") as f:
        kv = dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)
    return kv.get("ID", "").strip('"'), kv.get("VERSION_CODENAME", "").strip('"')


def dpkg_status():
    """name -> (Depends+Pre-Depends field text, installed) from the host's dpkg."""
    out = subprocess.run(["dpkg-query", "-W", "-f",
                          "${Package}\t${Status}\t${Pre-Depends}, ${Depends}\n"],
                         capture_output=True, text=True, check=True).stdout
    db = {}
    for line in out.splitlines():
        name, status, deps = line.split("\t")
        db[name] = (deps, status.endswith(" installed"))
    return db


def closure(db, pkgs):
    seen, todo = [], list(pkgs)
    while todo:
        p = todo.pop(0).split(":")[0]
        if p in seen:
            continue
        if p not in db or not db[p][1]:
            die(f"package {p} is not installed on this host (scripts/deps.sh installs the "
                f"packages whose libraries dra-doctor links)")
        seen.append(p)
        for dep in db[p][0].split(","):
            alts = [re.sub(r"\s*\(.*?\)", "", a).strip().split(":")[0] for a in dep.split("|")]
            alts = [a for a in alts if a]
            if not alts:
                continue
            have = [a for a in alts if a in db and db[a][1]]
            if not have:
                die(f"{p} depends on {dep.strip()}, none of which is installed")
            todo.append(have[0])
    return seen


def package_files(pkg):
    out = subprocess.run(["dpkg-query", "-L", pkg], capture_output=True, text=True,
                         check=True).stdout
    for f in out.splitlines():
        if f in ("/.", "") or f.startswith(SKIP):
            continue
        if os.path.isdir(f) and not os.path.islink(f):
            continue
        if os.path.lexists(f):
            yield f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dockerfile")
    ap.add_argument("out")
    ap.add_argument("--tag", action="append", required=True)
    ap.add_argument("--artifact", action="append", default=[],
                    help="STAGEPATH=HOSTPATH: the build stage's file STAGEPATH is HOSTPATH")
    a = ap.parse_args()
    artifacts = dict(x.split("=", 1) for x in a.artifact)

    layer = mkimage.new_layer()
    cfg = {"entrypoint": None, "cmd": None, "user": "", "env": [], "workdir": "/"}
    pkgs = []
    for kw, args in runtime_stage(instructions(a.dockerfile)):
        if kw == "FROM":
            m = re.fullmatch(r"debian:([a-z]+)(-slim)?(\s+AS\s+\S+)?", args, re.I)
            distro, codename = host_codename()
            if not m or distro != "debian" or m.group(1) != codename:
                die(f"runtime stage FROM {args}: this host is {distro} {codename}; its "
                    f"packages are not that image's")
        elif kw == "RUN":
            for cmd in re.split(r"&&|;", args):
                w = shlex.split(cmd)
                if w[:2] == ["apt-get", "install"] or (w[:1] == ["apt-get"] and "install" in w):
                    pkgs += [x for x in w[w.index("install") + 1:] if not x.startswith("-")]
                elif w[:2] in (["apt-get", "update"], ["rm", "-rf"]):
                    pass  # the package lists: nothing of them ends up in the layer here
                else:
                    die(f"RUN {cmd.strip()}: not understood (only apt-get update/install)")
        elif kw == "COPY":
            w = shlex.split(args)
            src = [x for x in w if not x.startswith("--")]
            frm = [x for x in w if x.startswith("--from=")]
            if not frm or len(src) != 2:
                die(f"COPY {args}: only COPY --from=STAGE FILE DEST is understood")
            if src[0] not in artifacts:
                die(f"COPY {args}: say which host file {src[0]} is (--artifact {src[0]}=PATH)")
            layer.host_file(artifacts[src[0]], src[1], 0o755)
        elif kw == "USER":
            cfg["user"] = args
        elif kw in ("ENTRYPOINT", "CMD"):
            cfg[kw.lower()] = json.loads(args)
        elif kw == "ENV":
            k, _, v = args.partition("=")
            cfg["env"].append(f"{k.strip()}={v.strip()}")
        elif kw == "WORKDIR":
            cfg["workdir"] = args
        elif kw in ("LABEL", "ARG", "EXPOSE"):
            pass
        else:
            die(f"{kw} {args}: not understood in the runtime stage")
    db = dpkg_status()
    for p in closure(db, pkgs):
        for f in package_files(p):
            layer.host_file(f, f)
    return mkimage.write_image(a.out, layer, a.tag, cfg["entrypoint"], cfg["cmd"], cfg["user"],
                               cfg["env"], cfg["workdir"])


if __name__ == "__main__":
    sys.exit(main())
