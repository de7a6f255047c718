"""The README demo: an MLP trained on npu follows the CPU run step for step (within 1e-5)."""
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import demo  # noqa: E402


def test_mlp_losses_match_cpu():
    x, y = demo.make_data()
    model = demo.make_model()
    cpu = demo.train(copy.deepcopy(model), x, y, "cpu", steps=15)
    npu = demo.train(copy.deepcopy(model), x, y, "npu", steps=15)
    assert len(npu) == 15 and cpu[-1] < cpu[0]
    assert max(abs(a - b) for a, b in zip(cpu, npu)) <= 1e-5


def test_demo_script_runs():
    assert demo.main(["--steps", "5"]) == 0
    assert torch.npu.memory_allocated() >= 0
