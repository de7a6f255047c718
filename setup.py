# Builds torch_npu_sim: CMake (Ninja + ccache) compiles backend_sim, kernels and the torch extension
# torch_npu_sim._C against the installed torch 2.13.0. Install with `pip install --no-build-isolation`.
import os
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))

# The `torch_npu` drop-in package must never shadow a real torch_npu (tools/install_guard.py says why).
if subprocess.call([sys.executable, os.path.join(ROOT, "tools", "install_guard.py")]) != 0:
    sys.exit(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # A torch_npu_sim installed earlier (say an editable install of this tree whose build/ was wiped)
        # is a torch.backends entry point that `import torch` would load, and fail on, before we build it.
        os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
        import torch  # the build uses the installed torch; never an isolated copy

        # CMake always writes the module next to the Python sources (so `ninja -C build/ext _C` keeps an
        # editable install current); setuptools' own output location gets a copy.
        target = os.path.abspath(self.get_ext_fullpath(ext.name))
        src_dir = os.path.join(ROOT, "torch_npu_sim")
        build_dir = os.environ.get("NPU_SIM_BUILD_DIR", os.path.join(ROOT, "build", "ext"))
        build_type = os.environ.get("NPU_SIM_BUILD_TYPE", "Release")
        subprocess.check_call([
            "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
            f"-DCMAKE_BUILD_TYPE={build_type}",
            f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DNPU_SIM_BUILD_TORCH=ON",
            "-DNPU_SIM_BUILD_TESTS=OFF",
            f"-DNPU_SIM_OUTPUT_DIR={src_dir}",
        ])
        jobs = os.environ.get("NPU_SIM_BUILD_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_C", "-j", jobs])
        built = os.path.join(src_dir, os.path.basename(target))
        if os.path.abspath(built) != target:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(built, target)


setup(
    name="torch_npu_sim",
    version="0.1.0",
    description="A simulated Ascend-style NPU backend for PyTorch (PrivateUse1 'npu')",
    packages=find_packages(include=["torch_npu_sim", "torch_npu_sim.*", "torch_npu", "torch_npu.*"]),
    py_modules=["npu_smi"],
    package_data={"torch_npu": ["torch_npu_api.txt"]},
    ext_modules=[CMakeExtension("torch_npu_sim._C")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.10",
    install_requires=["torch==2.13.0"],
    entry_points={"torch.backends": ["torch_npu_sim = torch_npu_sim:_autoload"],
                  "console_scripts": ["npu-smi = npu_smi:main"]},
    zip_safe=False,
)
