#!/usr/bin/env python3
"""A FUSE file system for the tests: it serves the files of a directory,
read-only and cached by the kernel (not direct_io), and answers each read
with half the bytes asked for (at least one). With --size-adds N, each
file's size says N bytes more than it holds.

    tests/fuse/short-reads.py SOURCE MOUNTPOINT [--size-adds N]

Needs /dev/fuse, libfuse 3 and the `mfusepy` module (scripts/test-deps
installs them). Runs in the foreground until unmounted.
"""

import argparse
import errno
import os
import stat
import sys

try:
    import mfusepy as fuse
except ImportError:
    sys.exit("short-reads: the mfusepy module is missing: pip install mfusepy")


class ShortReads(fuse.Operations):
    use_ns = True

    def __init__(self, source, size_adds):
        self.source = os.path.realpath(source)
        self.size_adds = size_adds

    def real(self, path):
        return os.path.join(self.source, path.lstrip("/"))

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self.real(path))
        except OSError as error:
            raise fuse.FuseOSError(error.errno)
        keys = ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_ino")
        attrs = {key: getattr(st, key) for key in keys}
        attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
        attrs["st_mode"] &= ~0o222
        if stat.S_ISREG(st.st_mode):
            attrs["st_size"] += self.size_adds
        return attrs

    def readdir(self, path, fh):
        return [".", ".."] + sorted(os.listdir(self.real(path)))

    def open(self, path, fi):
        if fi.flags & (os.O_WRONLY | os.O_RDWR):
            raise fuse.FuseOSError(errno.EROFS)
        try:
            fi.fh = os.open(self.real(path), os.O_RDONLY)
        except OSError as error:
            raise fuse.FuseOSError(error.errno)
        return 0

    def read(self, path, size, offset, fi):
        return os.pread(fi.fh, max(1, size // 2), offset)

    def release(self, path, fi):
        os.close(fi.fh)
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("mountpoint")
    parser.add_argument("--size-adds", type=int, default=0)
    args = parser.parse_args()
    fuse.FUSE(
        ShortReads(args.source, args.size_adds),
        args.mountpoint,
        raw_fi=True,
        foreground=True,
        nothreads=True,
        ro=True,
        fsname="short-reads",
        attr_timeout=0,
    )


if __name__ == "__main__":
    main()
