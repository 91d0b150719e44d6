#!/usr/bin/env python3
"""mkimage.py - a container image without a registry or a Docker engine.

Writes a docker-archive (the `docker save` layout, which `ctr images import`
reads): one uncompressed layer, its config and manifest.json with the tags.
The layer is reproducible: entries sorted, owned by 0:0, mtime 0.

  mkimage.py OUT.tar --tag NAME:TAG [--tag ...] [--entrypoint JSON] [--cmd JSON]
             [--user UID:GID] [--env K=V]... [--workdir DIR]
             [--file HOST:PATH[:MODE]]... [--symlink PATH:TARGET]...
             [--dir PATH[:MODE]]... [--text PATH:MODE:CONTENT]...
             [--files-from LIST]

--files-from LIST copies the host files named in LIST (one absolute path a
line) to the same paths in the image, symlinks as symlinks.  Paths under
/bin, /sbin, /lib and /lib64 go below /usr (Debian's merged /usr): the image
gets those four as symlinks.
"""
import argparse
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import tempfile

MERGED = ("bin", "sbin", "lib", "lib64")


def image_path(p):
    p = os.path.normpath("/" + p.lstrip("/")).lstrip("/")
    top = p.split("/", 1)[0]
    if top in MERGED:
        p = "usr/" + p
    return p


class Layer:
    def __init__(self):
        self.entries = {}  # path -> (TarInfo, bytes or None)

    def _parents(self, path):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self.entries:
                self.dir(d, 0o755)

    def _info(self, path, kind, mode):
        ti = tarfile.TarInfo(path)
        ti.type = kind
        ti.mode = mode
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        ti.mtime = 0
        return ti

    def dir(self, path, mode=0o755):
        path = image_path(path)
        if path in self.entries:
            return
        self._parents(path)
        self.entries[path] = (self._info(path, tarfile.DIRTYPE, mode), None)

    def data(self, path, mode, content):
        path = image_path(path)
        self._parents(path)
        ti = self._info(path, tarfile.REGTYPE, mode)
        ti.size = len(content)
        self.entries[path] = (ti, content)

    def symlink(self, path, target, raw=False):
        path = path.lstrip("/") if raw else image_path(path)
        self._parents(path)
        ti = self._info(path, tarfile.SYMTYPE, 0o777)
        ti.linkname = target
        self.entries[path] = (ti, None)

    def host_file(self, src, dst, mode=None):
        st = os.lstat(src)
        if stat.S_ISLNK(st.st_mode) and image_path(dst) in ["usr/" + m for m in MERGED]:
            return  # the host's own merged-/usr link (/lib -> usr/lib): the layer has its own
        if stat.S_ISLNK(st.st_mode):
            self.symlink(dst, os.readlink(src))
        elif stat.S_ISDIR(st.st_mode):
            self.dir(dst, stat.S_IMODE(st.st_mode))
        elif stat.S_ISREG(st.st_mode):
            with open(src, "rb") as f:
                self.data(dst, mode if mode is not None else stat.S_IMODE(st.st_mode), f.read())
        else:
            raise SystemExit(f"mkimage: {src}: not a file, directory or symlink")

    def write(self, f):
        with tarfile.open(fileobj=f, mode="w", format=tarfile.GNU_FORMAT) as t:
            for path in sorted(self.entries):
                ti, content = self.entries[path]
                t.addfile(ti, io.BytesIO(content) if content is not None else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--tag", action="append", required=True)
    ap.add_argument("--entrypoint", default="null")
    ap.add_argument("--cmd", default="null")
    ap.add_argument("--user", default="")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--workdir", default="/")
    ap.add_argument("--file", action="append", default=[])
    ap.add_argument("--symlink", action="append", default=[])
    ap.add_argument("--dir", action="append", default=[])
    ap.add_argument("--text", action="append", default=[])
    ap.add_argument("--files-from")
    a = ap.parse_args()

    layer = new_layer()
    if a.files_from:
        with open(a.files_from) as f:
            for line in f:
                p = line.strip()
                if p:
                    layer.host_file(p, p)
    for spec in a.dir:
        path, _, mode = spec.partition(":")
        layer.dir(path, int(mode, 8) if mode else 0o755)
    for spec in a.file:
        parts = spec.split(":")
        if len(parts) not in (2, 3):
            raise SystemExit(f"mkimage: --file {spec}: want HOST:PATH[:MODE]")
        layer.host_file(parts[0], parts[1], int(parts[2], 8) if len(parts) == 3 else None)
    for spec in a.symlink:
        path, _, target = spec.partition(":")
        layer.symlink(path, target)
    for spec in a.text:
        path, mode, content = spec.split(":", 2)
        layer.data(path, int(mode, 8), content.encode())

    return write_image(a.out, layer, a.tag, json.loads(a.entrypoint), json.loads(a.cmd),
                       a.user, a.env, a.workdir)


def new_layer():
    """A layer with Debian's merged-/usr symlinks, for write_image."""
    layer = Layer()
    for m in MERGED:
        layer.symlink(m, "usr/" + m, raw=True)
    return layer


def write_image(out, layer, tags, entrypoint, cmd, user="", env=(), workdir="/"):
    buf = io.BytesIO()
    layer.write(buf)
    blob = buf.getvalue()
    lsha = hashlib.sha256(blob).hexdigest()
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + list(env)
    cfg = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "Env": env,
            "Entrypoint": entrypoint,
            "Cmd": cmd,
            "WorkingDir": workdir,
            "User": user,
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + lsha]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "e2e/node/mkimage.py"}],
    }
    cblob = json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode()
    csha = hashlib.sha256(cblob).hexdigest()
    manifest = json.dumps([{"Config": csha + ".json", "RepoTags": list(tags),
                            "Layers": [lsha + "/layer.tar"]}]).encode()

    d = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".mkimage.")
    with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w") as t:
        for name, content in (("manifest.json", manifest), (csha + ".json", cblob),
                              (lsha + "/layer.tar", blob)):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(content), 0, 0o644
            t.addfile(ti, io.BytesIO(content))
    os.rename(tmp, out)
    print(f"{out}: {' '.join(tags)} (config sha256:{csha[:12]}, layer {len(blob) >> 10} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
