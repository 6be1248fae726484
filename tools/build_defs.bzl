"""Build macros for zero3: one place for compiler flags and the CUDA rule.

Every C++ target in the repository goes through zr_cc_library, zr_cc_test or
zr_cc_binary, so warnings and language level are set once, here.
"""

load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE")

# Warnings on for our own code. -Wno-sign-compare keeps size_t/int64 loops
# readable; everything else is on.
ZR_COPTS = [
    "-std=c++17",
    "-Wall",
    "-Wextra",
    "-Wno-sign-compare",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
    "-Werror=return-type",
    "-Werror=unused-result",
]

ZR_TEST_COPTS = ZR_COPTS

def zr_cc_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = ZR_COPTS + copts, **kwargs)

def zr_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = ZR_COPTS + copts, **kwargs)

def zr_cc_test(name, copts = [], deps = [], size = "small", **kwargs):
    native.cc_test(
        name = name,
        size = size,
        copts = ZR_TEST_COPTS + copts,
        deps = deps + ["@com_google_googletest//:gtest_main"],
        **kwargs
    )

def zr_cc_benchmark(name, copts = [], deps = [], tags = [], **kwargs):
    """A benchmark binary: prints figures, asserts nothing about speed."""
    native.cc_binary(
        name = name,
        copts = ZR_COPTS + copts,
        deps = deps + ["@com_github_google_benchmark//:benchmark"],
        tags = tags + ["benchmark"],
        testonly = True,
        **kwargs
    )

# sm_90 machine code for Hopper plus compute_90 PTX, so newer GPUs can JIT.
NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "-Xcompiler=-fPIC",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
    "--expt-relaxed-constexpr",
    "-lineinfo",
]

def zr_cuda_library(name, srcs, hdrs = [], deps = [], nvcc_flags = [], **kwargs):
    """Compiles .cu files with nvcc into a cc_library.

    Each .cu becomes one object through a genrule; the objects and the headers
    form a cc_library that links like any other. A .cu may include headers from
    this repository (by workspace-relative path) and from CUDA.
    """
    if not CUDA_AVAILABLE:
        return
    objs = []
    for src in srcs:
        obj = name + "_" + src.replace("/", "_").replace(".cu", ".o")
        native.genrule(
            name = obj + "_nvcc",
            srcs = [src] + hdrs,
            outs = [obj],
            # nvcc names its temporary files after its pid, and every
            # sandboxed action is pid 2 in a /tmp the actions share: each
            # compile gets a directory of its own.
            cmd = "t=$$(mktemp -d) && TMPDIR=$$t " + " ".join(
                ["/usr/local/cuda/bin/nvcc", "-c", "$(location " + src + ")", "-o", "$@", "-I."] +
                NVCC_FLAGS + nvcc_flags,
            ) + "; s=$$?; rm -rf $$t; exit $$s",
            tags = ["cuda"],
        )
        objs.append(obj)
    native.cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cudart"],
        copts = ZR_COPTS,
        # The static CUDA runtime must resolve inside the final binary.
        linkstatic = True,
        **kwargs
    )

def zr_cuda_cc_test(name, **kwargs):
    """A C++ test that needs the CUDA toolkit to build (not a GPU to pass).

    Defined only where CUDA is installed; at run time it should GTEST_SKIP
    when no GPU is visible.
    """
    if CUDA_AVAILABLE:
        zr_cc_test(name = name, **kwargs)

def zr_cuda_cc_library(**kwargs):
    """A C++ library that includes CUDA headers: defined only with the toolkit."""
    if CUDA_AVAILABLE:
        zr_cc_library(**kwargs)

def zr_cuda_cc_benchmark(**kwargs):
    """A benchmark that needs the CUDA toolkit to build."""
    if CUDA_AVAILABLE:
        zr_cc_benchmark(**kwargs)

def zr_if_cuda(if_true, if_false = []):
    """Returns if_true where the CUDA toolkit is installed, else if_false."""
    return if_true if CUDA_AVAILABLE else if_false
