"""npu-smi for the simulated NPUs: `npu-smi info` prints the devices, their HBM use and AI Core utilisation,
and the processes using them, in Ascend npu-smi's layout, from the registry files every process using the
runtime keeps (backend_sim/include/npu_sim/smi_registry.h). Files of dead processes are removed. Needs
neither torch nor the extension, so it answers at once."""
import mmap
import os
import struct
import sys
import time

_HEADER = struct.Struct("<8sIiQii32s64x")        # SmiHeader: 128 bytes
_DEVICE = struct.Struct("<iiQQQQq16x")           # SmiDevice: 64 bytes
_VERSION = 1
_NAME = "910B-sim"
_W = 96  # inner width of the table


def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _registry_dir():
    return os.environ.get("NPU_SIM_SMI_DIR") or "/dev/shm"


def _start_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])  # field 22 (fields after ")" start at 3)


def _read(path):
    """(pid, name, [device dicts]) of one registry file, or None if it is not a live process's."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < _HEADER.size:
                return None
            with mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ) as m:
                data = bytes(m)
    except OSError:
        return None
    magic, version, pid, start, count, _, name = _HEADER.unpack_from(data)
    if magic != b"NPUSMI\0\0" or version != _VERSION or size < _HEADER.size + count * _DEVICE.size:
        return None
    if _start_ticks(pid) != start:  # the process is gone (or its pid now belongs to another)
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    devices = []
    for d in range(count):
        phys, _, cap, used, busy, since, running = _DEVICE.unpack_from(data, _HEADER.size + d * _DEVICE.size)
        devices.append({"physical_id": phys, "capacity": cap, "used": used, "busy": busy, "since": since,
                        "running": running})
    return pid, name.split(b"\0", 1)[0].decode(errors="replace"), devices


def _processes():
    d = _registry_dir()
    try:
        names = sorted(n for n in os.listdir(d) if n.startswith("npusim-smi-"))
    except OSError:
        return []
    return [p for p in (_read(os.path.join(d, n)) for n in names) if p is not None]


def _busy_now(dev, now):
    return dev["busy"] + (now - dev["since"] if dev["running"] > 0 else 0)


def snapshot(interval=0.1):
    """Per physical NPU: capacity, HBM used, AI Core % over `interval` seconds, and the processes on it."""
    count = _env_int("NPU_SIM_DEVICE_COUNT", 8)
    capacity = _env_int("NPU_SIM_HBM_GB", 16) << 30
    npus = {i: {"capacity": capacity, "used": 0, "util": 0.0, "procs": []} for i in range(count)}
    t0 = time.monotonic_ns()
    first = {(pid, i): _busy_now(dev, t0) for pid, _, devs in _processes() for i, dev in enumerate(devs)}
    time.sleep(interval)
    t1 = time.monotonic_ns()
    for pid, name, devs in _processes():
        for i, dev in enumerate(devs):
            npu = npus.setdefault(dev["physical_id"], {"capacity": dev["capacity"], "used": 0, "util": 0.0,
                                                       "procs": []})
            npu["capacity"] = dev["capacity"]
            npu["used"] += dev["used"]
            if (pid, i) in first and t1 > t0:
                npu["util"] += (_busy_now(dev, t1) - first[(pid, i)]) / (t1 - t0)
            if dev["used"] > 0 or dev["running"] > 0:
                npu["procs"].append((pid, name, dev["used"]))
    for npu in npus.values():
        npu["util"] = max(0, min(100, round(100 * npu["util"])))
    return npus


def _row(*cells):
    widths = (27, 15, _W - 27 - 15 - 2)
    return "|" + "|".join(" " + str(c).ljust(w - 1) for c, w in zip(cells, widths)) + "|"


def _rule(ch="-"):
    return "+" + ch * 27 + "+" + ch * 15 + "+" + ch * (_W - 44) + "+"


def info(npus):
    mb = lambda b: b >> 20  # noqa: E731
    out = ["+" + "-" * (_W) + "+",
           "| " + f"npu-smi (torch_npu_sim)          Version: {_VERSION}".ljust(_W - 1) + "|",
           _rule(),
           _row("NPU   Name", "Health", "Power(W)    Temp(C)           Hugepages-Usage(page)"),
           _row("Chip", "Bus-Id", "AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)"),
           _rule("=")]
    for i, npu in sorted(npus.items()):
        out.append(_row(f"{i:<6d}{_NAME}", "OK", f"{'NA':<12}{'NA':<18}0    / 0"))
        hbm = f"{mb(npu['used'])} / {mb(npu['capacity'])}"
        out.append(_row("0", f"0000:{i:02X}:00.0", f"{npu['util']:<12d}{'0    / 0':<18}{hbm}"))
        out.append(_rule("="))
    out.append(_rule())
    out.append("|" + " NPU     Chip".ljust(27) + "|" + " Process id".ljust(15) + "|" +
               " Process name             | Process memory(MB)".ljust(_W - 44) + "|")
    out.append(_rule("="))
    for i, npu in sorted(npus.items()):
        if not npu["procs"]:
            out.append("| " + f"No running processes found in NPU {i}".ljust(_W - 1) + "|")
        for pid, name, used in npu["procs"]:
            out.append("|" + f" {i:<8d}0".ljust(27) + "|" + f" {pid}".ljust(15) + "|" +
                       f" {name:<25}| {mb(used)}".ljust(_W - 44) + "|")
        out.append(_rule("="))
    return "\n".join(out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] != ["info"]:
        print("usage: npu-smi info\n  Shows the simulated NPUs, their HBM use and AI Core utilisation, and the "
              "processes using them.", file=sys.stderr)
        return 2
    print(info(snapshot()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
