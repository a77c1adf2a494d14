"""Builds libreact.so with the Go toolchain and ships it inside react_torch."""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithGo(build_py):
    def run(self):
        super().run()
        go = shutil.which("go") or "/usr/local/go/bin/go"
        # an editable install loads the package from the source tree
        pkg = os.path.join(HERE, "python") if getattr(self, "editable_mode", False) else self.build_lib
        out = os.path.join(pkg, "react_torch", "libreact.so")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        # export exactly capi/react.h's functions, as `make lib` does
        ldflags = "-extldflags=-Wl,--version-script=" + os.path.join(HERE, "libreact", "react.map")
        env = dict(os.environ, CGO_ENABLED="1")
        subprocess.check_call([go, "build", "-buildmode=c-shared", "-ldflags=" + ldflags, "-o", out, "./libreact"], cwd=HERE, env=env)
        header = out[: -len(".so")] + ".h"  # cgo's header; capi/react.h is the contract
        if os.path.exists(header):
            os.remove(header)


setup(cmdclass={"build_py": BuildWithGo})
