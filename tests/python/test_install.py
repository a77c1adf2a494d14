"""`make wheel` (`pip wheel .`, the build `pip install .` runs as well)
builds libreact with the Go toolchain and C compiler that the build
requirements bring and ships it in the package; the installed package
loads its own copy."""

import glob
import os
import re
import subprocess
import sys

from conftest import ROOT, launch


def _no_toolchain(tmp_path):
    """An environment whose go, gcc and cc fail: a build that needs the
    machine's toolchain fails in it."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    for name in ("go", "gcc", "cc"):
        (fake / name).write_text(f"#!/bin/sh\necho 'the machine's {name} was called' >&2\nexit 1\n")
        (fake / name).chmod(0o755)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if not os.path.exists(os.path.join(p, "go"))]
    env = {k: v for k, v in os.environ.items() if k not in ("REACT_LIBRARY", "REACT_GO", "REACT_CC", "GOROOT", "CC")}
    env["PATH"] = os.pathsep.join([str(fake), *path])
    return env


def test_wheel_installs_and_runs_from_a_fresh_venv(tmp_path):
    """`make wheel` (no toolchain on the machine; `pip wheel .`, the build
    `pip install .` runs too): one manylinux_2_17 wheel, py3-none, needing
    glibc 2.17 at most, that ships libreact exporting capi/react.h and
    nothing else; installed with pip, it loads its own copy; installed into
    a fresh virtual environment, it runs a 2-rank AllReduce and a 4-rank
    pattern switch, with react_torch and libreact from the wheel alone."""
    env = _no_toolchain(tmp_path)
    r = subprocess.run(["make", "-s", "wheel", f"VENV={os.path.dirname(os.path.dirname(sys.executable))}"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    wheels = glob.glob(os.path.join(ROOT, "dist", "react_torch-*.whl"))
    assert len(wheels) == 1, wheels
    whl = wheels[0]
    assert re.fullmatch(r"react_torch-[0-9.]+-py3-none-([a-z0-9_]+\.)*manylinux_2_17_x86_64(\.[a-z0-9_]+)*\.whl", os.path.basename(whl)), whl
    show = subprocess.run([os.path.join(os.path.dirname(sys.executable), "auditwheel"), "show", whl], capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    versions = [tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", show.stdout)]
    assert versions and max(versions) <= (2, 17), show.stdout
    _installed_loads_its_own_copy(tmp_path, whl)
    # a fresh venv: torch and the rest from this one (a .pth file), react_torch only from the wheel
    fresh = tmp_path / "fresh"
    subprocess.run(["python3", "-m", "venv", str(fresh)], check=True, timeout=300)
    py = str(fresh / "bin" / "python")
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "REACT_LIBRARY")}  # the source tree out of sight
    site_of = lambda exe: subprocess.run([exe, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=clean, capture_output=True,
                                         text=True, check=True).stdout.strip()
    ours = site_of(sys.executable)
    with open(os.path.join(site_of(py), "torch-from-test-venv.pth"), "w") as f:
        f.write(ours + "\n")
    r = subprocess.run([py, "-m", "pip", "install", "--quiet", "--no-deps", whl], env=clean, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for rc, out, err in launch(2, "installed", python=py, source=False):
        assert rc == 0 and "OK installed" in out, err[-3000:]
        assert str(fresh) in out, out
    for rc, out, err in launch(4, "switch", env={"REACT_TEST_SLOW_RANK": "3", "REACT_LAG": "2", "REACT_MODEL": "paper"}, python=py, source=False):
        assert rc == 0 and "OK switch" in out, err[-3000:]


def _installed_loads_its_own_copy(tmp_path, whl):
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), whl], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lib = target / "react_torch" / "libreact.so"
    assert lib.exists()
    env = {k: v for k, v in os.environ.items() if k != "REACT_LIBRARY"}
    env["PYTHONPATH"] = str(target)
    code = ("import react_torch, torch.distributed as dist; from react_torch import _lib; "
            "print(_lib.library_path()); print('react' in dist.Backend.backend_list); "
            "print(len(_lib.generate_pattern('allreduce', 'tree', 8, -1)) > 0)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-3000:]
    path, registered, generated = out.stdout.split()
    assert os.path.samefile(path, lib)
    assert registered == "True" and generated == "True"
    exported = subprocess.run(["sh", os.path.join(ROOT, "tests", "capi", "check_symbols.sh"), os.path.join(ROOT, "capi", "react.h"), str(lib)],
                              capture_output=True, text=True)
    assert exported.returncode == 0, exported.stdout + exported.stderr


def test_readme_lists_every_setting():
    from react_torch import config

    readme = open(os.path.join(ROOT, "README.md")).read()
    assert config.table() in readme, "README's REACT_* table is stale: paste react_torch.config.table()"


def test_pyproject_names_the_torch_floor():
    """pyproject's torch range starts where `import react_torch` stops
    refusing (torch can construct a Backend written in Python from there)."""
    import re

    import react_torch

    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    m = re.search(r'"torch>=([0-9.]+),', text)
    assert m, "pyproject.toml has no torch>= bound"
    assert m.group(1) == react_torch.TORCH_FLOOR
