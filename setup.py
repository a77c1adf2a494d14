"""Builds libreact.so with the Go toolchain and ships it inside react_torch."""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithGo(build_py):
    def run(self):
        go = shutil.which("go") or "/usr/local/go/bin/go"
        out = os.path.join(HERE, "python", "react_torch", "libreact.so")
        env = dict(os.environ, CGO_ENABLED="1")
        subprocess.check_call([go, "build", "-buildmode=c-shared", "-o", out, "./libreact"], cwd=HERE, env=env)
        super().run()


setup(cmdclass={"build_py": BuildWithGo})
