"""torch's own DistributedTest (torch/testing/_internal/distributed/
distributed_test.py, shipped in the wheel), driven as upstream's
test/distributed/test_distributed_spawn.py drives it, on the backend named
by TORCHSUITE_BACKEND (react or gloo).

react is given the tests gloo gets: the module's skip decorators read
BACKEND when it is imported, so it is imported with BACKEND=gloo; then the
backend the tests create their groups with becomes TORCHSUITE_BACKEND.
Spawned ranks import this file again and do the same.

    TORCHSUITE_BACKEND=react WORLD_SIZE=3 python tests/torchsuite/suite.py -v [-k PATTERN]
"""

import os
import sys

BACKEND = os.environ.get("TORCHSUITE_BACKEND", "react")
os.environ["BACKEND"] = "gloo"  # the skip decorators see gloo
os.environ.setdefault("WORLD_SIZE", "3")
os.environ.setdefault("TEMP_DIR", "/tmp")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

if BACKEND == "react":
    import react_torch  # noqa: E402,F401  registers the backend in every rank

from torch.testing._internal.common_utils import run_tests  # noqa: E402
from torch.testing._internal.distributed import distributed_test as dt  # noqa: E402



class _AsGloo(str):
    """The backend under test as the tests' bodies read BACKEND: its name
    (init_process_group(backend=BACKEND), f-strings, .lower()), and equal to
    "gloo" too, so that `if BACKEND == "gloo"` picks gloo's code paths and
    expectations (some bodies have no branch for another backend)."""

    def __eq__(self, other):
        return str.__eq__(self, other) or other == "gloo"

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__


dt.BACKEND = _AsGloo(BACKEND) if BACKEND != "gloo" else BACKEND
os.environ["BACKEND"] = BACKEND  # subgroups made with os.environ["BACKEND"]

if not dist.is_available():
    print("distributed package not available", file=sys.stderr)
    sys.exit(0)


class TestDistBackendWithSpawn(dt.TestDistBackend, dt.DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if os.environ.get("TORCHSUITE_FORK") == "1":
            # forked ranks skip importing torch again (seconds each on a busy machine)
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()


def _main() -> None:
    """With TORCHSUITE_RESULTS=path: runs the tests named on the command line
    (fnmatch patterns, as -k) and writes each one's outcome to path as JSON;
    else torch's run_tests."""
    out = os.environ.get("TORCHSUITE_RESULTS")
    if not out:
        run_tests()
        return
    import json
    import time
    import unittest

    from torch.testing._internal import common_utils

    pats = sys.argv[1:] or ["*"]
    sys.argv = sys.argv[:1]
    if hasattr(common_utils, "parse_cmd_line_args"):  # before torch 2.9 common_utils parses them when imported
        common_utils.parse_cmd_line_args()
    loader = unittest.TestLoader()
    loader.testNamePatterns = [p if any(c in p for c in "*?[") else f"*{p}*" for p in pats]
    suite = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
    outcomes = {}

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            self._t0 = time.time()
            super().startTest(test)

        def _note(self, test, what, detail=""):
            outcomes[test._testMethodName] = {"outcome": what, "seconds": round(time.time() - self._t0, 1), "detail": detail[-2000:]}

        def addSuccess(self, test):
            super().addSuccess(test)
            self._note(test, "pass")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._note(test, "fail", self._exc_info_to_string(err, test))

        def addError(self, test, err):
            super().addError(test, err)
            self._note(test, "error", self._exc_info_to_string(err, test))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._note(test, "skip", reason)

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._note(test, "pass")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._note(test, "fail", "unexpected success")

    unittest.TextTestRunner(verbosity=2, resultclass=Result).run(suite)
    with open(out, "w") as f:
        json.dump(outcomes, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    _main()
