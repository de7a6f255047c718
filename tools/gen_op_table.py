#!/usr/bin/env python3
"""The op table's generator: csrc/aten/ops.yaml -> the npu registrations, the kernels' declarations, docs/ops.md.

Run by CMake at build time (see csrc/CMakeLists.txt). Signatures come from PyTorch's own schema
(torchgen's copy of native_functions.yaml, as torch_npu's and XLA's backend codegen do), so a kernel
defined with a signature that differs from its schema fails to compile ("no declaration matches").

  gen_op_table.py --table csrc/aten/ops.yaml --out-dir <build>/generated --register-shards 4 --doc docs/ops.md
  gen_op_table.py --table csrc/aten/ops.yaml --check-doc docs/ops.md   # exit 1 if the doc is stale
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field

import yaml

STRUCT = "NPUNativeFunctions"
NAMESPACE = "torch_npu_sim"
ARITIES = ("unary", "binary", "ternary")
DISPATCH_KEYS = ("PrivateUse1", "QuantizedPrivateUse1")
DTYPE_ORDER = ["f64", "f32", "f16", "bf16", "c128", "c64", "i64", "i32", "i16", "i8", "u8", "bool"]


@dataclass
class Op:
    name: str  # "add.Tensor"
    family: str
    file: str
    kernel: str | None = None  # an existing C++ kernel (at::native::view); default NPUNativeFunctions::<name>
    boxed: str | None = None  # a boxed kernel shared by the family or named by the op (NPUNativeFunctions::<boxed>)
    or_cpu: bool = False  # dtypes the kernel library lacks run on the CPU fallback
    dtypes: list[str] = field(default_factory=list)
    note: str = ""
    pointwise: Pointwise | None = None  # the kernel is generated: a catalogue op over the structured meta
    namespace: str = "aten"  # or "npu": the project's own ops (torch_npu's npu_* fused ops)
    schema: str = ""  # an npu op's schema, which the generated TORCH_LIBRARY(npu) defines
    key: str = "PrivateUse1"  # the dispatch key: QuantizedPrivateUse1 for ops on npu quantized tensors


@dataclass
class Pointwise:
    """A generated kernel: kernel-catalogue op `op` of `arity` (unary/binary/ternary) over ATen's structured
    meta function `meta`, with `params` (schema argument names) as the kernel's scalar parameters."""

    arity: str
    op: str
    params: list[str]
    meta: str = ""  # at::meta::<meta>, set from the op's structured group
    meta_header: str = ""


def torchgen_dir() -> str:
    import torchgen

    return os.path.dirname(torchgen.__file__)


def load_schemas():
    from torchgen.gen import parse_native_yaml

    native = os.path.join(torchgen_dir(), "packaged", "ATen", "native")
    parsed = parse_native_yaml(os.path.join(native, "native_functions.yaml"), os.path.join(native, "tags.yaml"))
    return {str(f.func.name): f for f in parsed.native_functions}, parsed.backend_indices


def structured_groups(schemas) -> dict[str, tuple[str, str]]:
    """op name -> (its structured meta class, the header declaring it), for ops of a structured group."""
    from torchgen.api import meta
    from torchgen.gen import get_grouped_native_functions
    from torchgen.model import NativeFunctionsGroup

    out = {}
    for g in get_grouped_native_functions([f for f in schemas.values() if not isinstance(f, NpuFunction)]):
        if isinstance(g, NativeFunctionsGroup) and g.structured:
            for f in g.functions():
                out[str(f.func.name)] = (f"structured_{meta.name(g)}", f"{g.functional.func.name.name.base}_meta.h")
    return out


def expand_dtypes(spec, sets: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for item in spec if isinstance(spec, list) else [spec]:
        for d in expand_dtypes(sets[item], sets) if item in sets else [item]:
            if d not in DTYPE_ORDER:
                raise SystemExit(f"ops.yaml: unknown dtype {d!r} (known: {', '.join(DTYPE_ORDER)})")
            if d not in out:
                out.append(d)
    return sorted(out, key=DTYPE_ORDER.index)


def load_table(path: str) -> list[Op]:
    with open(path) as f:
        doc = yaml.safe_load(f)
    sets = doc.get("dtype_sets", {})
    ops: list[Op] = []
    seen: dict[str, str] = {}
    for fam in doc["families"]:
        for entry in fam["ops"]:
            name, attrs = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
            attrs = attrs or {}
            unknown = set(attrs) - {"kernel", "boxed_kernel", "or_cpu", "dtypes", "note", "params", "schema", *ARITIES}
            if unknown:
                raise SystemExit(f"ops.yaml: {name}: unknown keys {sorted(unknown)}")
            arity = [a for a in ARITIES if a in attrs]
            if len(arity) > 1 or (not arity and "params" in attrs) or (arity and "kernel" in attrs):
                raise SystemExit(f"ops.yaml: {name}: give at most one of {', '.join(ARITIES)} (params only with one), "
                                 "and no kernel with it")
            namespace = fam.get("namespace", "aten")
            if namespace not in ("aten", "npu") or (namespace == "npu") != ("schema" in attrs):
                raise SystemExit(f"ops.yaml: {name}: an op of namespace npu gives its schema, an aten op does not "
                                 f"(namespace {namespace!r})")
            if namespace == "npu" and (arity or attrs.get("or_cpu") or "kernel" in attrs):
                raise SystemExit(f"ops.yaml: {name}: an npu op has its own kernel (no kernel, or_cpu or {arity})")
            key = fam.get("dispatch_key", "PrivateUse1")
            if key not in DISPATCH_KEYS or (key != "PrivateUse1" and namespace != "aten"):
                raise SystemExit(f"ops.yaml: {fam['family']}: dispatch_key {key!r} (one of {', '.join(DISPATCH_KEYS)}; "
                                 "npu ops are PrivateUse1)")
            if (name, key) in seen:
                raise SystemExit(f"ops.yaml: {name} is listed twice ({seen[name, key]} and {fam['family']})")
            seen[name, key] = fam["family"]
            ops.append(Op(name=name, family=fam["family"], file=fam["file"],
                          kernel=attrs.get("kernel"), boxed=attrs.get("boxed_kernel", fam.get("boxed_kernel")),
                          or_cpu=bool(attrs.get("or_cpu", fam.get("or_cpu", False))),
                          dtypes=expand_dtypes(attrs.get("dtypes", fam.get("dtypes", [])), sets),
                          note=attrs.get("note", ""),
                          pointwise=Pointwise(arity[0], attrs[arity[0]], attrs.get("params", [])) if arity else None,
                          namespace=namespace, schema=attrs.get("schema", ""), key=key))
    return ops


@dataclass
class NpuFunction:
    """An npu op's schema, standing in for torchgen's NativeFunction where the generator needs one."""

    func: object  # torchgen.model.FunctionSchema
    use_const_ref_for_mutable_tensors: bool = False
    part_of_structured_group: bool = False


def add_npu_schemas(ops: list[Op], schemas) -> None:
    """Parses the npu ops' schemas into `schemas` (by name), checking each names its own op."""
    from torchgen.model import FunctionSchema

    for op in ops:
        if op.namespace != "npu":
            continue
        try:
            func = FunctionSchema.parse(op.schema)
        except Exception as e:  # torchgen raises AssertionError / RuntimeError with the offending text
            raise SystemExit(f"ops.yaml: {op.name}: bad schema {op.schema!r}: {e}")
        if str(func.name) != op.name:
            raise SystemExit(f"ops.yaml: {op.name}: the schema names {func.name}")
        schemas[op.name] = NpuFunction(func)


def signature(f):
    """The kernel's C++ signature: the dispatcher's, with int for SymInt (the dispatcher converts)."""
    from torchgen import local
    from torchgen.api.types import DispatcherSignature

    # as PyTorch's codegen: resize_ & co. take `const Tensor&` self, structured groups take ITensorListRef
    with local.parametrize(use_const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
                           use_ilistref_for_tensor_lists=f.part_of_structured_group):
        sig = DispatcherSignature.from_schema(f.func, symint=False)
        return Signature(sig.decl(name="@NAME@"), sig.type(), sig.returns_type().cpp_type(),
                         [a.name for a in sig.arguments()])


@dataclass
class Signature:
    """A kernel signature's C++ text, computed under the op's own torchgen settings."""

    decl_template: str
    type: str
    ret: str
    arg_names: list[str]

    def decl(self, name: str) -> str:
        return self.decl_template.replace("@NAME@", name)


def kernel_name(f) -> str:
    from torchgen.api import dispatcher

    return dispatcher.name(f.func)


def gen_header(ops: list[Op], schemas) -> str:
    decls = set()
    boxed = set()
    for op in ops:
        if op.kernel:
            continue
        if op.boxed:
            boxed.add(op.boxed)
            continue
        f = schemas[op.name]
        decls.add(f"  static {signature(f).decl(name=kernel_name(f))};")
    lines = [
        "// @generated by tools/gen_op_table.py from csrc/aten/ops.yaml: do not edit.",
        "// The npu kernels of the op table, one per registered schema; defined in the family files.",
        "#pragma once",
        "#include <ATen/Tensor.h>",
        "#include <ATen/core/dispatch/Dispatcher.h>",
        "",
        f"namespace {NAMESPACE} {{",
        "",
        f"struct {STRUCT} {{",
        *sorted(decls),
        *[f"  static void {b}(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack);"
          for b in sorted(boxed)],
        "};",
        "",
        f"}}  // namespace {NAMESPACE}",
        "",
    ]
    return "\n".join(lines)


def split_name(name: str) -> tuple[str, str]:
    base, _, overload = name.partition(".")
    return base, overload


# Mutating ops whose inputs may alias what they write by design: set_ shares the source's storage, resize_as_
# reads only the template's sizes.
OVERLAP_EXEMPT = {"set_", "resize_as_", "resize_as_sparse_"}


def overlap_operands(op: Op, f) -> tuple[list[str], list[str]]:
    """(the tensors the op writes, its Tensor / Tensor? inputs) by schema name, for the overlap guard; nothing for
    ops whose kernel is generated over a TensorIterator (it applies ATen's own overlap check) or exempt."""
    if op.pointwise or split_name(op.name)[0] in OVERLAP_EXEMPT:
        return [], []
    written, inputs = [], []
    for a in f.func.arguments.flat_all:
        kind = str(a.type)
        if a.annotation is not None and a.annotation.is_write:
            if kind == "Tensor":
                written.append(a.name)
        elif kind in ("Tensor", "Tensor?"):
            inputs.append(a.name)
    return written, inputs


def gen_register(ops: list[Op], schemas, shard: int, shards: int) -> str:
    """register_npu_ops_<shard>.cpp, one of `shards` files (csrc/CMakeLists.txt says how many): a contiguous slice
    of the table's aten ops; shard 0 also defines the npu namespace's own ops."""
    wrappers: list[str] = []
    includes = set()
    family = None
    npu_defs: list[str] = []
    npu_body: list[str] = []
    npu_cpu: list[str] = []
    bodies: dict[str, list[str]] = {key: [] for key in DISPATCH_KEYS}
    aten_ops = [op for op in ops if op.namespace != "npu"]
    size = -(-len(aten_ops) // shards)
    mine = aten_ops[shard * size:(shard + 1) * size] + ([op for op in ops if op.namespace == "npu"] if shard == 0 else [])
    for op in mine:
        body = bodies[op.key]
        if op.namespace == "npu":
            f = schemas[op.name]
            npu_defs.append(f'  m.def("{f.func}");')
            npu_body.append(f'  m.impl("{op.name}", c10::CompileTimeFunctionPointer<{signature(f).type}, '
                            f'&{STRUCT}::{kernel_name(f)}>());')
            npu_cpu.append(f'  m.impl("{op.name}", torch::CppFunction::makeFromBoxedFunction<&npu_op_on_cpu>());')
            continue
        if op.family != family:
            family = op.family
            body.append(f"  // {op.family} ({op.file})")
        if op.boxed:
            body.append(f'  m.impl("{op.name}", torch::CppFunction::makeFromBoxedFunction<&{STRUCT}::{op.boxed}>());')
            continue
        f = schemas[op.name]
        sig = signature(f)
        if op.kernel:
            if op.kernel.startswith("at::native::"):
                includes.add(f"#include <ATen/ops/{split_name(op.name)[0]}_native.h>")
            target = op.kernel
        else:
            target = f"{STRUCT}::{kernel_name(f)}"
        written, inputs = overlap_operands(op, f)
        if written and inputs:
            # out= and in-place kernels run behind the overlap rule (aten/out_overlap.h)
            guarded = "overlap_checked_" + re.sub(r"\W", "_", op.name)
            args = ", ".join(f"guard.input({a})" if a in inputs else a for a in sig.arg_names)
            wrappers.append(
                f"{sig.decl(name=guarded)} {{\n"
                f"  OutOverlapGuard guard({{{', '.join('&' + w for w in written)}}});\n"
                f"  return {target}({args});\n"
                f"}}\n")
            target = guarded
        if not op.or_cpu:
            body.append(f'  m.impl("{op.name}", c10::CompileTimeFunctionPointer<{sig.type}, &{target}>());')
            continue
        # dtypes the kernel library lacks: the native kernel throws NoKernelForDtype, the CPU fallback runs
        wrapper = "or_cpu_" + re.sub(r"\W", "_", op.name)
        args = ", ".join(sig.arg_names)
        ret = sig.ret
        fn_type = sig.type
        base, overload = split_name(op.name)
        wrappers.append(
            f"{sig.decl(name=wrapper)} {{\n"
            f'  return OrCpu<{fn_type}>::call("aten::{base}", "{overload}", [&]() -> {ret} {{ return {target}({args}); }}, {args});\n'
            f"}}\n")
        body.append(f'  m.impl("{op.name}", TORCH_FN({wrapper}));')
    npu_lines = [
        "// The project's own ops (torch_npu's names and schemas): defined here, npu kernels, and on CPU tensors an",
        "// error naming the argument (their Meta/fake kernels and autograd are registered from Python).",
        "TORCH_LIBRARY(npu, m) {",
        *npu_defs,
        "}",
        "",
        "TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {",
        *npu_body,
        "}",
        "",
        "TORCH_LIBRARY_IMPL(npu, CPU, m) {",
        *npu_cpu,
        "}",
        "",
    ] if npu_defs else []
    lines = [
        "// @generated by tools/gen_op_table.py from csrc/aten/ops.yaml: do not edit.",
        f"// The npu registrations of the op table, part {shard + 1} of {shards}: one line per aten schema, in "
        "the table's order.",
        "#include <ATen/core/op_registration/adaption.h>",
        "#include <torch/library.h>",
        *sorted(includes),
        "",
        '#include "fallback/dtype_fallback.h"',
        '#include "npu_native_functions.h"',
        '#include "aten/npu_ops_check.h"',
        '#include "aten/out_overlap.h"',
        "",
        f"namespace {NAMESPACE} {{",
        "namespace {",
        "",
        *wrappers,
        "}  // namespace",
        "",
        *[line for key, body in bodies.items() if body
          for line in (f"TORCH_LIBRARY_IMPL(aten, {key}, m) {{", *body, "}", "")],
        *npu_lines,
        f"}}  // namespace {NAMESPACE}",
        "",
    ]
    return "\n".join(lines)


def resolve_pointwise(ops: list[Op], schemas) -> None:
    """Checks the generated kernels' entries against their schemas and finds their meta classes."""
    groups = structured_groups(schemas)
    for op in ops:
        pw = op.pointwise
        if pw is None:
            continue
        if op.name not in groups:
            raise SystemExit(f"ops.yaml: {op.name}: {pw.arity}: the op has no structured meta function")
        pw.meta, pw.meta_header = groups[op.name]
        args = signature(schemas[op.name]).arg_names
        bad = [p for p in pw.params if p not in args]
        if bad:
            raise SystemExit(f"ops.yaml: {op.name}: params {bad} are not arguments of the schema ({', '.join(args)})")
        if len(pw.params) > 2:
            raise SystemExit(f"ops.yaml: {op.name}: at most two params (the kernel's a and b)")


def pointwise_body(op: Op, f, sig: Signature) -> str:
    """`return ...;` of a generated kernel: the flat-path helper of pointwise_structured.h, or, with params or
    three operands, NpuStructured's flavour with the kernel callable of pointwise.h."""
    from torchgen.model import SchemaKind

    pw = op.pointwise
    kind = f.func.kind()
    enum = f"npu_kernels::{pw.arity.capitalize()}Op::{pw.op}"
    args = sig.arg_names
    if not pw.params and pw.arity != "ternary":
        helper = pw.arity + {SchemaKind.functional: "", SchemaKind.inplace: "_", SchemaKind.out: "_out"}[kind]
        return f"return {helper}<at::meta::{pw.meta}>({enum}, {', '.join(args)});"
    params = f", with_{'ab'[:len(pw.params)]}({', '.join(pw.params)})" if pw.params else ""
    kernel = f"{pw.arity}_kernel({enum}{params})"
    flavour = {SchemaKind.functional: "functional", SchemaKind.inplace: "inplace", SchemaKind.out: "out"}[kind]
    if kind == SchemaKind.out:
        args = [args[-1]] + args[:-1]  # NpuStructured takes the out tensor first
    return f"return structured_{flavour}<at::meta::{pw.meta}>({kernel}, {', '.join(args)});"


def gen_pointwise_kernels(ops: list[Op], schemas) -> str:
    defs, includes = [], set()
    for op in ops:
        if op.pointwise is None:
            continue
        f = schemas[op.name]
        sig = signature(f)
        includes.add(f"#include <ATen/ops/{op.pointwise.meta_header}>")
        defs.append(f"{sig.decl(name=f'{STRUCT}::{kernel_name(f)}')} {{ {pointwise_body(op, f, sig)} }}")
    lines = [
        "// @generated by tools/gen_op_table.py from csrc/aten/ops.yaml: do not edit.",
        "// The npu kernels of the op table's unary/binary/ternary entries: a kernel-catalogue op over ATen's",
        "// structured meta function (shapes, promotion and checks from libtorch; the math in kernels/).",
        *sorted(includes),
        "",
        '#include "aten/pointwise_structured.h"',
        '#include "npu_native_functions.h"',
        "",
        f"namespace {NAMESPACE} {{",
        "",
        *defs,
        "",
        f"}}  // namespace {NAMESPACE}",
        "",
    ]
    return "\n".join(lines)


def load_derivatives() -> dict[str, list[str]]:
    """op name (with overload) -> the formulas of its derivatives.yaml entry."""
    with open(os.path.join(torchgen_dir(), "packaged", "autograd", "derivatives.yaml")) as f:
        entries = yaml.safe_load(f)
    out: dict[str, list[str]] = {}
    for e in entries:
        name = e["name"].split("(")[0]
        out[name] = [str(v) for k, v in e.items() if k not in ("name", "dispatch", "output_differentiability")]
    return out


def backward_of(op: str, derivs: dict[str, list[str]], schemas, native: set[str]) -> str:
    base, overload = split_name(op)
    if base.endswith("_") or overload.endswith("out") or "out" == overload or overload.endswith("_out"):
        return "—"  # in-place and out= variants: autograd goes through the functional op
    formulas = derivs.get(op)
    if formulas is None:
        return "—"
    text = " ".join(formulas)
    if "non_differentiable" in text and not re.search(r"\w+\(", text.replace("non_differentiable", "")):
        return "not differentiable"
    called = []
    for m in re.finditer(r"\b([a-z_0-9]+_backward[a-z_0-9]*)\(", text):
        name = m.group(1)
        if any(k.split(".")[0] == name for k in schemas) and name not in called:
            called.append(name)
    if not called:
        return "formula of other ops"
    marks = []
    for name in called:
        is_native = any(n.split(".")[0] == name for n in native)
        marks.append(f"`{name}` ({'native' if is_native else 'CPU fallback'})")
    return ", ".join(marks)


def gen_doc(ops: list[Op], schemas, backend_indices) -> str:
    from torchgen.model import DispatchKey

    derivs = load_derivatives()
    native = {op.name for op in ops}
    by_family: dict[str, list[Op]] = {}
    for op in ops:
        by_family.setdefault(op.family, []).append(op)
    cpu_index = backend_indices[DispatchKey.CPU]
    fallback = sorted(name for name, f in schemas.items()
                      if name not in native and cpu_index.has_kernel(f) and not name.startswith("_foreach_"))
    lines = [
        "<!-- @generated by tools/gen_op_table.py from csrc/aten/ops.yaml at build time: do not edit. -->",
        "# The npu op table",
        "",
        "Every aten op with an npu kernel, from the op table of record `csrc/aten/ops.yaml`. Registrations",
        "are generated from the same table, and `tests/python/test_op_table.py` fails when the table and the",
        "dispatcher's PrivateUse1 registrations disagree. Dtypes: the kernel library's native dtypes; with",
        "*others → CPU* an operand of another dtype (complex, mostly) runs the op on the CPU fallback, otherwise",
        "it is an error. Backward: the `*_backward` ops PyTorch's autograd formula calls (from",
        "`derivatives.yaml`), each native or CPU fallback; composite ops dispatch to the ops they call.",
        "",
        f"{len(ops)} native registrations in {len(by_family)} families; {len(fallback)} aten ops with a CPU kernel",
        "run through the CPU fallback (listed at the end).",
        "",
    ]
    for fam, fops in by_family.items():
        key = "" if fops[0].key == "PrivateUse1" else f", dispatch key {fops[0].key}"
        lines += [f"## {fam} (`csrc/aten/{fops[0].file}`{key})", "", "| op | dtypes | backward |", "|---|---|---|"]
        for op in fops:
            dt = " ".join(op.dtypes) if op.dtypes else "any"
            if op.or_cpu:
                dt += "; others → CPU"
            extra = f" ({op.note})" if op.note else ""
            shown = op.name if op.namespace == "aten" else f"{op.namespace}::{op.name}"
            lines.append(f"| `{shown}`{extra} | {dt} | {backward_of(op.name, derivs, schemas, native)} |")
        lines.append("")
    lines += ["## Through the CPU fallback", "",
              "Aten ops with a CPU kernel and no npu kernel: they run on the CPU with a warning (an error under",
              "`TORCH_NPU_FALLBACK_CPU_DISABLE=1`). `_foreach_*` ops without a native kernel are listed under foreach.",
              ""]
    lines.append(", ".join(f"`{n}`" for n in fallback))
    lines.append("")
    return "\n".join(lines)


def write_if_changed(path: str, text: str) -> None:
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True)
    ap.add_argument("--out-dir")
    ap.add_argument("--register-shards", type=int, default=1, help="files the registrations are split over")
    ap.add_argument("--doc")
    ap.add_argument("--check-doc")
    args = ap.parse_args()
    ops = load_table(args.table)
    schemas, backend_indices = load_schemas()
    add_npu_schemas(ops, schemas)
    missing = [op.name for op in ops if op.name not in schemas]
    if missing:
        raise SystemExit(f"ops.yaml: not aten schemas: {', '.join(missing)}")
    resolve_pointwise(ops, schemas)
    if args.out_dir:
        write_if_changed(os.path.join(args.out_dir, "npu_native_functions.h"), gen_header(ops, schemas))
        write_if_changed(os.path.join(args.out_dir, "npu_pointwise_kernels.cpp"), gen_pointwise_kernels(ops, schemas))
        for shard in range(args.register_shards):
            write_if_changed(os.path.join(args.out_dir, f"register_npu_ops_{shard}.cpp"),
                             gen_register(ops, schemas, shard, args.register_shards))
    doc = gen_doc(ops, schemas, backend_indices)
    if args.doc:
        write_if_changed(args.doc, doc)
    if args.check_doc:
        with open(args.check_doc) as f:
            if f.read() != doc:
                print(f"{args.check_doc} is stale: rebuild (it is generated from {args.table})", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
