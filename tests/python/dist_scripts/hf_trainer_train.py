"""HF Trainer on a tiny random Llama (nothing downloaded). argv: mode in {npu, npu_bf16, npu_fp16, cpu,
cpu_bf16}, output dir. On npu the device is found the way transformers finds it (import torch_npu);
`cpu` runs pass use_cpu=True. Prints one JSON line: the device the Trainer used and its logged losses."""
import json
import os
import sys

mode, out_dir = sys.argv[1], sys.argv[2]
if mode.startswith("npu"):
    import torch_npu  # noqa: F401  (what a torch_npu user has already; transformers probes for it)

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
model = LlamaForCausalLM(cfg)
g = torch.Generator().manual_seed(1)
data = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 128, (32, 16), generator=g)]
args = TrainingArguments(output_dir=out_dir, per_device_train_batch_size=8, max_steps=6, logging_steps=1,
                         learning_rate=1e-3, report_to=[], save_strategy="no", use_cpu=mode.startswith("cpu"),
                         bf16=mode.endswith("bf16"), fp16=mode.endswith("fp16"), dataloader_num_workers=0,
                         seed=0, data_seed=0)
trainer = Trainer(model=model, args=args, train_dataset=data)
trainer.train()
losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
backend = torch.distributed.get_backend() if torch.distributed.is_initialized() else None
# One write of a whole line (< PIPE_BUF): the ranks share the launcher's pipe and must not interleave.
sys.stdout.flush()
os.write(1, (json.dumps({"device": str(args.device), "param_device": str(next(model.parameters()).device),
                         "losses": losses, "world": args.world_size, "backend": backend,
                         "distributed_type": str(trainer.accelerator.distributed_type)}) + "\n").encode())
# CPU PyTorch 2.13's gloo aborts a rank at interpreter exit now and then ("terminate called without an active
# exception", after its result): a 2-rank DDP script with plain gloo, torch_npu_sim not even loaded, did so in 2
# of 30 runs (2026-11-27). The gloo reference run therefore leaves without running C++ static destructors.
if backend == "gloo":
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
if torch.distributed.is_initialized():
    torch.distributed.destroy_process_group()
