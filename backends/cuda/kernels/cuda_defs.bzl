"""Macros for targets of this package that need the CUDA toolkit to build.

Plain C++ targets that include CUDA or cuBLAS headers exist only where
@local_cuda found the toolkit (as zr_cuda_library and zr_cuda_cc_test do), so
`bazel build //...` still works on machines without it.
"""

load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE")
load(
    "//tools:build_defs.bzl",
    "zr_cc_benchmark",
    "zr_cc_binary",
    "zr_cc_library",
)

def cuda_cc_library(**kwargs):
    if CUDA_AVAILABLE:
        zr_cc_library(**kwargs)

def cuda_cc_binary(**kwargs):
    if CUDA_AVAILABLE:
        zr_cc_binary(**kwargs)

def cuda_cc_benchmark(**kwargs):
    if CUDA_AVAILABLE:
        zr_cc_benchmark(**kwargs)
