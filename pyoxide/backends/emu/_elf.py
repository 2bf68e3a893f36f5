"""One section of an ELF64 little-endian shared library (the emulator libraries
cargo-oxide builds on Linux), read from its bytes: enough to find the kernel
descriptors `#[kernel]` leaves in the ``.oxide.kernels`` section."""

from __future__ import annotations

import struct


def section(data: bytes, name: str) -> bytes | None:
    """The contents of section ``name``, or None when absent or not ELF64 LE."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

        def header(i: int) -> tuple[int, int, int]:
            base = shoff + i * shentsize
            (sh_name,) = struct.unpack_from("<I", data, base)
            sh_offset, sh_size = struct.unpack_from("<QQ", data, base + 0x18)
            return sh_name, sh_offset, sh_size

        _, names_at, names_size = header(shstrndx)
        names = data[names_at : names_at + names_size]
        for i in range(shnum):
            sh_name, offset, size = header(i)
            end = names.find(b"\0", sh_name)
            if names[sh_name:end].decode("ascii", "replace") == name:
                return data[offset : offset + size]
    except struct.error:
        return None
    return None
