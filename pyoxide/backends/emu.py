"""The CPU emulator backend: runs kernels on host (NumPy) arrays.

The emulator library (``<crate>.emu.so``, built by cargo-oxide from the same Rust
source) does not exist yet; until it does this backend keeps the protocol and
refuses every load with an :class:`EmulatorError` that says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._arrays import HOST
from ..errors import EmulatorError

if TYPE_CHECKING:
    from .._manifest import KernelSpec, Manifest

NOT_BUILT = (
    "the CPU emulator is not built yet, so kernels cannot run on NumPy (host) arrays. "
    "Fix: pass GPU arrays (cupy.asarray(x), or a CUDA torch tensor) to run on the GPU."
)


class EmuBackend:
    name = "emu"
    array_kind = HOST

    def current_device(self) -> int:
        return 0

    def device_of_pointer(self, ptr: int) -> int | None:
        return 0

    def load_module(self, manifest: Manifest, device: int) -> Any:
        raise EmulatorError(f"{manifest.crate_name}: {NOT_BUILT}")

    def get_function(self, module: Any, entry: str) -> Any:
        raise EmulatorError(NOT_BUILT, kernel=entry)

    def launch(
        self,
        function: Any,
        *,
        kernel: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: Sequence[Any],
        shared_mem: int,
        stream: Any,
        producer_streams: Sequence[int],
    ) -> None:
        raise EmulatorError(f"{kernel}: {NOT_BUILT}", kernel=kernel)

    def fast_launcher(
        self, spec: KernelSpec, function: Any, device: int, default_block: int
    ) -> None:
        return None  # every emulated launch takes the general path
