"""`pip install .` builds libreact with the Go toolchain and ships it in the
package; the installed package loads its own copy."""

import os
import subprocess
import sys

from conftest import ROOT


def test_pip_install_ships_libreact(tmp_path):
    target = tmp_path / "site"
    env = dict(os.environ, PATH="/usr/local/go/bin:" + os.environ.get("PATH", ""))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), ROOT],
                       env=env, capture_output=True, text=True, timeout=600)
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
