# SPDX-License-Identifier: MIT
"""The extension tern._tern for pip (pyproject.toml): compiled from src/*.c
against the libtern that pkg-config finds, with an RPATH to its directory
so that a libtern outside the loader's path still loads."""
import glob
import os
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "tern"], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("tern: pkg-config cannot find libtern (install it, or set "
                         f"PKG_CONFIG_PATH=PREFIX/lib/pkgconfig): {e}") from e
    return shlex.split(out)


cflags = pkg_config("--cflags")
libdirs = [f[2:] for f in pkg_config("--libs-only-L")]
incdirs = [f[2:] for f in cflags if f.startswith("-I")]


def header_has(call):
    """The calls of newer libterns (builder, ingest) are bound when the
    installed tern.h declares them."""
    import os
    for d in incdirs + ["/usr/local/include", "/usr/include"]:
        p = os.path.join(d, "tern.h")
        if os.path.exists(p):
            with open(p) as f:
                return call + "(" in f.read()
    return False


defines = [(m, None) for c, m in [("tern_builder_open", "PT_HAVE_BUILDER"),
                                 ("tern_ingest", "PT_HAVE_INGEST")] if header_has(c)]
# tern.dask's C path for TSV sources uses `tern import`'s own parser, from
# the source tree next to this directory (tools/tern); without it the
# package reads TSV in Python (tern.HAVE_TSV false).
tsv_dir = "../tools/tern"
tsv_sources = [f"{tsv_dir}/tsv.c", f"{tsv_dir}/escape.c"]
if all(os.path.exists(p) for p in tsv_sources):
    defines.append(("PT_HAVE_TSV", None))
    incdirs = incdirs + [tsv_dir]
else:
    tsv_sources = []
ext = Extension(
    "tern._tern",
    sources=sorted(glob.glob("src/*.c")) + tsv_sources,
    include_dirs=incdirs,
    define_macros=defines,
    library_dirs=libdirs,
    libraries=[f[2:] for f in pkg_config("--libs-only-l")],
    runtime_library_dirs=libdirs,
    extra_compile_args=["-std=c11", "-Wall", "-Wextra"],
)
setup(ext_modules=[ext])
