"""torch_npu.contrib: ``transfer_to_npu`` (import it to run CUDA-style scripts on npu)."""
