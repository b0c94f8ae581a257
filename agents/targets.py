"""The architecture the kernels are for (`--target`): its peak rates, memory, vocabulary and literature.

The paper designs for AMD's MI300 while an evaluator elsewhere measures; here the target may differ from the
device that evaluates. `TARGETS` holds the known ones (`known()` lists their names); `for_device(name)` finds one
from a device's name or gfx arch ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X", "gfx942"), else describes the
device as it is named, with no figures (the graph passes the GPU name the evaluator recorded, or "cpu").
Figures are vendors' dense peaks as the notes in literature/ give them.
`Target.arch_labels` are the `architectures` labels of literature/ notes to search (retrieval's arch filter).
"""

from __future__ import annotations

from pydantic import BaseModel

CDNA3_WORDS = (
    "wavefronts of 64 lanes (not warps of 32); LDS (64 KB per CU) as shared memory; MFMA matrix-core instructions "
    "(v_mfma_*); VGPRs, AGPRs and occupancy in waves per SIMD; XCD chiplets behind the Infinity Cache; Triton's AMD "
    "knobs waves_per_eu, matrix_instr_nonkdim and kpack; FP8 in the fnuz formats. No TMA, warpgroups or clusters."
)
HOPPER_WORDS = (
    "warps of 32 and warpgroups of 4 warps issuing wgmma; TMA (cp.async.bulk.tensor) bulk copies with mbarriers; "
    "thread block clusters with distributed shared memory; up to 228 KB shared memory per SM; FP8 e4m3/e5m2 tensor "
    "cores."
)


class Target(BaseModel):
    """One architecture the kernels are written for."""

    name: str
    title: str
    arch: str
    arch_labels: tuple[str, ...] = ()
    search_terms: str = ""
    rates: str = ""
    memory: str = ""
    vocabulary: str = ""
    marks: tuple[str, ...] = ()

    def describe(self) -> str:
        """The target as the designer's prompt shows it."""
        lines = [f"{self.title} ({self.arch})."]
        lines += [f"Peak rates: {self.rates}"] if self.rates else []
        lines += [f"Memory: {self.memory}"] if self.memory else []
        lines += [f"Its vocabulary: {self.vocabulary}"] if self.vocabulary else []
        return "\n".join(lines)


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target(
            name="mi300x",
            title="AMD Instinct MI300X",
            arch="CDNA3, gfx942, 304 CUs at 2.1 GHz",
            arch_labels=("cdna3",),
            search_terms="MI300X CDNA3 wavefronts LDS MFMA HBM3",
            rates="FP16/BF16 matrix 1,307 TFLOP/s, FP8 matrix 2,615, TF32 654, FP32 vector 163 (dense).",
            memory="192 GB HBM3 at 5.3 TB/s; 256 MB Infinity Cache; 4 MB L2 per XCD (8 XCDs); 64 KB LDS per CU.",
            vocabulary=CDNA3_WORDS,
            marks=("mi300", "gfx942"),
        ),
        Target(
            name="mi325x",
            title="AMD Instinct MI325X",
            arch="CDNA3, gfx942, 304 CUs at 2.1 GHz",
            arch_labels=("cdna3",),
            search_terms="MI325X MI300X CDNA3 wavefronts LDS MFMA HBM3E",
            rates="as MI300X: FP16/BF16 matrix 1,307 TFLOP/s, FP8 matrix 2,615, FP32 vector 163 (dense).",
            memory="256 GB HBM3E at 6 TB/s; 256 MB Infinity Cache; 64 KB LDS per CU.",
            vocabulary=CDNA3_WORDS,
            marks=("mi325",),
        ),
        Target(
            name="mi355x",
            title="AMD Instinct MI355X",
            arch="CDNA4, gfx950, 256 CUs at 2.4 GHz; the literature covers its predecessor CDNA3",
            arch_labels=("cdna3",),
            search_terms="MI300X CDNA3 CDNA4 wavefronts LDS MFMA",
            rates="FP16/BF16 matrix about 2.5 PFLOP/s, FP8 about 5 PFLOP/s, MXFP4/MXFP6 about 10 PFLOP/s (dense).",
            memory="288 GB HBM3E at 8 TB/s; 256 MB Infinity Cache; 160 KB LDS per CU.",
            vocabulary=CDNA3_WORDS.replace("64 KB per CU", "160 KB per CU on CDNA4"),
            marks=("mi355", "mi350", "gfx950"),
        ),
        Target(
            name="h100",
            title="NVIDIA H100 SXM",
            arch="Hopper, sm_90, 132 SMs",
            arch_labels=("hopper",),
            search_terms="H100 Hopper TMA warpgroups wgmma clusters",
            rates="BF16/FP16 tensor 989 TFLOP/s, FP8 tensor 1,979, TF32 495, FP32 67 (dense).",
            memory="80 GB HBM3 at 3.35 TB/s; 50 MB L2; 228 KB shared memory per SM.",
            vocabulary=HOPPER_WORDS,
            marks=("h100",),
        ),
        Target(
            name="h200",
            title="NVIDIA H200 SXM",
            arch="Hopper, sm_90, 132 SMs",
            arch_labels=("hopper",),
            search_terms="H200 H100 Hopper TMA warpgroups wgmma clusters HBM3e",
            rates="as H100: BF16/FP16 tensor 989 TFLOP/s, FP8 tensor 1,979, FP32 67 (dense).",
            memory="141 GB HBM3e at 4.8 TB/s; 50 MB L2; 228 KB shared memory per SM.",
            vocabulary=HOPPER_WORDS,
            marks=("h200",),
        ),
        Target(
            name="a100",
            title="NVIDIA A100 SXM",
            arch="Ampere, sm_80, 108 SMs; the literature has no Ampere notes, only general ones",
            arch_labels=("generic",),
            search_terms="A100 Ampere warps cp.async shared memory tensor cores",
            rates="BF16/FP16 tensor 312 TFLOP/s, TF32 156, FP32 19.5 (dense); no FP8.",
            memory="80 GB HBM2e at 2.0 TB/s; 40 MB L2; 164 KB shared memory per SM.",
            vocabulary="warps of 32; cp.async for asynchronous global-to-shared copies; mma.sync and ldmatrix for the "
            "tensor cores; up to 164 KB shared memory per SM. No TMA, wgmma, clusters or FP8.",
            marks=("a100",),
        ),
        Target(
            name="cpu",
            title="the CPU",
            arch="Triton's interpreter: timings rank candidates, they are not GPU performance",
            search_terms="GPU kernel",
        ),
    )
}


class UnknownTarget(ValueError):
    """A --target name that is not in `TARGETS`."""


def known() -> str:
    """The known target names, comma-separated."""
    return ", ".join(TARGETS)


def get_target(name: str) -> Target:
    """The known target `name` (case-insensitive); raises UnknownTarget with a one-line message listing them."""
    target = TARGETS.get(name.strip().lower())
    if target is None:
        raise UnknownTarget(f"unknown target {name!r}; known targets: {known()}")
    return target


def for_device(name: str) -> Target:
    """The target a device's name or gfx arch names, else one that describes the device as named."""
    lowered = name.lower()
    if lowered in ("", "cpu"):
        return TARGETS["cpu"]
    found = next((t for t in TARGETS.values() if any(mark in lowered for mark in t.marks)), None)
    return found or Target(name=lowered, title=name, arch="not in the known targets: no figures", search_terms="GPU")
