"""Refuses to install torch_npu_sim's `torch_npu` package over a real torch_npu (run by setup.py).

A real torch_npu (Huawei's, for Ascend hardware) and this simulator's drop-in both own the import name
`torch_npu`; installing one over the other would silently replace the real backend. Exit status 1 with a
message naming the installed distribution, 0 when there is none (or it is ours).
"""
import importlib.metadata
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = os.path.join(ROOT, "torch_npu")


def real_torch_npu():
    """A description of a torch_npu that is not this tree's, or None."""
    for name in ("torch_npu", "torch-npu"):
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        return f"distribution {dist.metadata['Name']} {dist.version} at {dist.locate_file('')}"
    spec = importlib.util.find_spec("torch_npu")
    if spec is not None and spec.origin is not None:
        where = os.path.dirname(os.path.abspath(spec.origin))
        if os.path.realpath(where) != os.path.realpath(OURS):
            return f"package torch_npu at {where}"
    return None


def main():
    found = real_torch_npu()
    if found is None:
        return 0
    print(f"torch_npu_sim: refusing to install: a real torch_npu is installed ({found}). torch_npu_sim "
          "provides its own `torch_npu` package for code written for Ascend, and installing it here would "
          "shadow the real backend. Uninstall torch_npu first, or install torch_npu_sim into another "
          "virtual environment.", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
