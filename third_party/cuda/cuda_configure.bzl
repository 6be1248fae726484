"""Detects the CUDA toolkit at /usr/local/cuda.

CI machines and GPU build hosts have it; a plain Debian machine may not. When
it is absent the repository still exists, with CUDA_AVAILABLE = False, and the
CUDA macros in //tools:build_defs.bzl define no targets, so `bazel test //...`
works everywhere and the CUDA backend builds wherever nvcc is.
"""

_CUDA_ROOT = "/usr/local/cuda"

def _cuda_configure_impl(ctx):
    available = ctx.path(_CUDA_ROOT + "/bin/nvcc").exists
    ctx.file("defs.bzl", "CUDA_AVAILABLE = %s\n" % available)
    if available:
        for entry in ["include", "lib64", "bin"]:
            ctx.symlink(_CUDA_ROOT + "/" + entry, entry)
        ctx.template("BUILD.bazel", ctx.attr.build_file)
    else:
        ctx.file("BUILD.bazel", "# CUDA not found at %s.\n" % _CUDA_ROOT)

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    attrs = {"build_file": attr.label()},
    local = True,
)
