"""The op table of record (csrc/aten/ops.yaml) against what the dispatcher really has registered for npu."""
import os
import re
import subprocess
import sys

import torch
import yaml

import torch_npu_sim  # noqa: F401  registers the kernels

from conftest import ROOT

TABLE = os.path.join(ROOT, "csrc", "aten", "ops.yaml")
GEN = os.path.join(ROOT, "tools", "gen_op_table.py")


KEYS = ("PrivateUse1", "QuantizedPrivateUse1")


def table(key="PrivateUse1"):
    """The table's ops registered under dispatch key `key` (a family's dispatch_key, PrivateUse1 by default)."""
    with open(TABLE) as f:
        doc = yaml.safe_load(f)
    ops = {}
    for fam in doc["families"]:
        if fam.get("dispatch_key", "PrivateUse1") != key:
            continue
        for entry in fam["ops"]:
            name = entry if isinstance(entry, str) else next(iter(entry))
            ops[name if fam.get("namespace", "aten") == "aten" else f"{fam['namespace']}::{name}"] = fam
    return ops, doc["families"]


def registered(key="PrivateUse1"):
    """aten ops (unqualified) and npu:: ops with a kernel for `key`, as the dispatcher lists them."""
    regs = torch._C._dispatch_get_registrations_for_dispatch_key(key)
    return {r[len("aten::"):] for r in regs if r.startswith("aten::")} | {r for r in regs if r.startswith("npu::")}


def test_every_registered_op_is_in_the_table_and_every_table_op_is_registered():
    for key in KEYS:
        ops, _ = table(key)
        regs = registered(key)
        assert ops, key
        assert sorted(regs - ops.keys()) == [], f"registered for {key} but missing from csrc/aten/ops.yaml"
        assert sorted(ops.keys() - regs) == [], f"in csrc/aten/ops.yaml but not registered for {key}"


def test_every_table_op_is_an_aten_schema_with_an_npu_kernel():
    # m.impl on a name that is no schema registers nothing callable: "remainder.out" instead of
    # "remainder.Tensor_out" left torch.remainder(a, b, out=c) on the CPU fallback
    for key in KEYS:
        ops, _ = table(key)
        for name in ops:
            qualified = name if "::" in name else "aten::" + name
            base, _, overload = qualified.partition(".")
            torch._C._dispatch_find_schema_or_throw(base, overload)
            assert torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key), (name, key)


def test_npu_namespace_ops_are_defined_by_the_table_with_their_schema_and_a_cpu_refusal():
    # the table's npu:: ops: defined with the table's schema, an npu kernel, a CPU kernel that names the
    # argument, and a Meta (fake) kernel from torch_npu_sim/fused_ops.py
    with open(TABLE) as f:
        doc = yaml.safe_load(f)
    npu_ops = [(next(iter(e)), next(iter(e.values()))) for fam in doc["families"] if fam.get("namespace") == "npu"
               for e in fam["ops"]]
    assert npu_ops
    for name, attrs in npu_ops:
        op = getattr(torch.ops.npu, name).default
        assert str(op._schema) == str(torch._C.parse_schema("npu::" + attrs["schema"])), name
        for key in ("PrivateUse1", "CPU", "Meta"):
            assert torch._C._dispatch_has_kernel_for_dispatch_key("npu::" + name, key), (name, key)


def test_the_generator_refuses_bad_npu_entries(tmp_path):
    bad = {"no schema": "  - npu_x: {note: n}\n",
           "wrong name": '  - npu_x: {schema: "npu_y(Tensor a) -> Tensor"}\n',
           "unparsable": '  - npu_x: {schema: "npu_x(Tensor a -> Tensor"}\n',
           "generated kernel": '  - npu_x: {schema: "npu_x(Tensor a) -> Tensor", unary: kExp}\n'}
    for what, line in bad.items():
        path = tmp_path / "ops.yaml"
        path.write_text("families:\n- family: f\n  file: f.cpp\n  namespace: npu\n  ops:\n" + line)
        r = subprocess.run([sys.executable, GEN, "--table", str(path), "--out-dir", str(tmp_path / "gen")],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "npu_x" in r.stderr, (what, r.stderr)


def test_family_files_register_nothing_by_hand():
    # a family made from the table keeps its kernels in its file and no PrivateUse1 registration of its own
    _, families = table()
    for fam in families:
        with open(os.path.join(ROOT, "csrc", "aten", fam["file"])) as f:
            text = f.read()
        assert not re.search(r"TORCH_LIBRARY_IMPL\(aten, PrivateUse1|Library::IMPL", text), fam["file"]


def test_ops_md_is_generated_from_the_table():
    r = subprocess.run([sys.executable, GEN, "--table", TABLE, "--check-doc", os.path.join(ROOT, "docs", "ops.md")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_an_out_variant_named_in_the_table_runs_natively(native_only):
    a = torch.tensor([5.0, -7.0, 3.5])
    b = torch.tensor([3.0, 2.0, -2.0])
    out = torch.empty(3, device="npu")
    torch.remainder(a.to("npu"), b.to("npu"), out=out)
    torch.testing.assert_close(out.cpu(), torch.remainder(a, b))
    eq = torch.empty(3, dtype=torch.bool, device="npu")
    torch.eq(a.to("npu"), b.to("npu"), out=eq)
    torch.testing.assert_close(eq.cpu(), torch.eq(a, b))
    # out= variants whose kernels the table generates from their catalogue op (they fell back before)
    an, bn = a.to("npu"), b.to("npu")
    for fn in (lambda x, y, o: torch.ops.aten.softplus.out(x, 2.0, 1.0, out=o),
               lambda x, y, o: torch.ops.aten.softplus_backward.grad_input(y, x, 2.0, 1.0, grad_input=o),
               lambda x, y, o: torch.ops.aten.threshold.out(x, 1.0, -3.0, out=o),
               lambda x, y, o: torch.ops.aten.leaky_relu_backward.grad_input(y, x, 0.1, False, grad_input=o),
               lambda x, y, o: torch.ops.aten.hardsigmoid_backward.grad_input(y, x, grad_input=o)):
        o = torch.empty(3, device="npu")
        fn(an, bn, o)
        torch.testing.assert_close(o.cpu(), fn(a, b, torch.empty(3)))
    t = an.clone()
    torch.threshold_(t, 1.0, -3.0)
    torch.testing.assert_close(t.cpu(), torch.threshold(a, 1.0, -3.0))


DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "c128": torch.complex128, "c64": torch.complex64, "i64": torch.int64, "i32": torch.int32,
          "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool}


def declared_dtypes():
    with open(TABLE) as f:
        doc = yaml.safe_load(f)
    sets = doc.get("dtype_sets", {})

    def expand(spec):
        out = []
        for item in spec if isinstance(spec, list) else [spec]:
            out += expand(sets[item]) if item in sets else [item]
        return out

    for fam in doc["families"]:
        if fam.get("namespace", "aten") != "aten":
            continue  # the npu:: ops have their own tests (test_fused_ops.py)
        for entry in fam["ops"]:
            name, attrs = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
            spec = (attrs or {}).get("dtypes", fam.get("dtypes"))
            if spec:
                yield name, expand(spec)


def unary_functional(name):
    """The aten overload if it is callable as op(tensor) -> Tensor (other arguments defaulted), else None."""
    base, _, overload = name.partition(".")
    op = getattr(getattr(torch.ops.aten, base), overload or "default")
    args, rets = op._schema.arguments, op._schema.returns
    if (args and str(args[0].type) == "Tensor" and not args[0].is_write and len(rets) == 1
            and not rets[0].alias_info and all(a.has_default_value() for a in args[1:])):
        return op
    return None


def test_declared_dtypes_of_unary_ops_run_natively():
    # the dtypes column of docs/ops.md is the table's: each declared dtype must be one CPU accepts too and
    # must run on the npu kernel, not on the CPU fallback
    wrong = []
    for name, dtypes in declared_dtypes():
        op = unary_functional(name)
        if op is None:
            continue
        samples = {d: (torch.arange(1, 7) % 3).reshape(2, 3).to(DTYPES[d]) for d in dtypes}
        on_cpu = {}  # dtype -> the sample CPU accepted, or its error
        for d, x in samples.items():
            try:
                op(x)
                on_cpu[d] = x
            except (RuntimeError, NotImplementedError) as e:
                on_cpu[d] = e
        if all(isinstance(v, Exception) for v in on_cpu.values()):
            continue  # the sample does not suit the op (clamp without bounds, bincount of a 2-D tensor)
        for d, x in on_cpu.items():
            if isinstance(x, Exception):
                wrong.append(f"{name}: CPU refuses {d}")
                continue
            torch_npu_sim.reset_fallback_ops()
            op(x.to("npu")).cpu()
            if torch_npu_sim.fallback_ops():
                wrong.append(f"{name}: {d} runs on the CPU fallback")
    assert wrong == []


def run_generator(tmp_path, table_text):
    table = tmp_path / "ops.yaml"
    table.write_text(table_text)
    return subprocess.run([sys.executable, GEN, "--table", str(table), "--out-dir", str(tmp_path / "gen")],
                          capture_output=True, text=True)


def test_the_generator_refuses_a_bad_table_and_writes_nothing(tmp_path):
    # each mistake stops the build with a message naming it, before any registration is written
    cases = {
        "remainder.out": "not aten schemas: remainder.out",  # the old misnamed out= registration
        "exp\n  - exp": "exp is listed twice",
        "exp: {dtypes: [f33]}": "unknown dtype 'f33'",
        "exp: {kernal: x}": "unknown keys ['kernal']",
        "exp: {unary: kExp, binary: kAdd}": "give at most one of unary, binary, ternary",
        "exp: {params: [self]}": "give at most one of unary, binary, ternary",
        "leaky_relu: {unary: kLeakyRelu, params: [slope]}": "params ['slope'] are not arguments of the schema",
        "where.self: {ternary: kWhere}": "where.self: ternary: the op has no structured meta function",
    }
    for entry, message in cases.items():
        r = run_generator(tmp_path, f"families:\n- family: f\n  file: f.cpp\n  ops:\n  - {entry}\n")
        assert r.returncode != 0 and message in r.stderr, (entry, r.stderr)
        assert not (tmp_path / "gen").exists()
    ok = run_generator(tmp_path, "families:\n- family: f\n  file: f.cpp\n  ops:\n  - exp\n  - exp.out\n")
    assert ok.returncode == 0, ok.stderr
    text = (tmp_path / "gen" / "register_npu_ops_0.cpp").read_text()
    assert 'm.impl("exp", ' in text and 'm.impl("exp.out", ' in text
    # a pointwise entry gets its kernel written: the meta function, then the catalogue op (params as a, b)
    ok = run_generator(tmp_path, "families:\n- family: f\n  file: f.cpp\n  ops:\n  - exp_: {unary: kExp}\n"
                                 "  - softplus.out: {unary: kSoftplus, params: [beta, threshold]}\n")
    assert ok.returncode == 0, ok.stderr
    text = (tmp_path / "gen" / "npu_pointwise_kernels.cpp").read_text()
    assert "NPUNativeFunctions::exp_(at::Tensor & self) { return unary_<at::meta::structured_exp>(" in text
    assert ("return structured_out<at::meta::structured_softplus>(unary_kernel(npu_kernels::UnaryOp::kSoftplus, "
            "with_ab(beta, threshold)), out, self, beta, threshold);") in text


def test_the_generator_refuses_bad_dispatch_keys_and_allows_one_op_per_key(tmp_path):
    fam = "families:\n- family: f\n  file: f.cpp\n{extra}  ops:\n  - {op}\n"
    for extra in ("  dispatch_key: CUDA\n", "  dispatch_key: QuantizedPrivateUse1\n  namespace: npu\n"):
        r = run_generator(tmp_path, fam.format(extra=extra, op='npu_x: {schema: "npu_x(Tensor a) -> Tensor"}'
                                               if "npu" in extra else "int_repr"))
        assert r.returncode != 0 and "dispatch_key" in r.stderr, (extra, r.stderr)
    both = (fam.format(extra="", op="view: {kernel: at::native::view}") +
            fam.format(extra="  dispatch_key: QuantizedPrivateUse1\n", op="view: {kernel: at::native::view}")
            .replace("families:\n", ""))
    r = run_generator(tmp_path, both)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "gen" / "register_npu_ops_0.cpp").read_text()
    assert "TORCH_LIBRARY_IMPL(aten, QuantizedPrivateUse1, m)" in text and text.count('m.impl("view"') == 2
    r = run_generator(tmp_path, both.replace("QuantizedPrivateUse1", "PrivateUse1"))
    assert r.returncode != 0 and "view is listed twice" in r.stderr
