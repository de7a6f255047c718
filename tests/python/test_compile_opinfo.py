"""CI subset of tools/compile_conformance.py: OpInfos of PyTorch's op_db compiled by Inductor for npu against CPU
eager (or CPU compiled), one family each: pointwise, reductions, scans, norms, indexing, extern matmul and
convolution, pooling, sorting. The full run is committed as docs/compile_summary.md."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from compile_conformance import all_ops, check_op, full_name  # noqa: E402

SUBSET = ["add", "where", "sigmoid", "pow", "sum", "var", "amax", "cumsum", "log_softmax", "nn.functional.layer_norm",
          "gather", "index_add", "nn.functional.embedding", "addmm", "nn.functional.conv2d",
          "nn.functional.max_pool2d", "topk"]


@pytest.mark.parametrize("op", [op for op in all_ops(set(SUBSET)) if not op.variant_test_name], ids=full_name)
def test_compiled_opinfo_matches_cpu(op):
    status, detail = check_op(op, max_samples=1)
    assert status == "pass", f"{full_name(op)}: {status} {detail}"
