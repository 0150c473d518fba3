"""Read symbols from a 64-bit little-endian ELF file (a program or an object)."""

from __future__ import annotations

import struct
from pathlib import Path


def symbols(path: Path | str) -> dict[str, tuple[int, int]]:
    """name -> (address, size) for every named symbol in .symtab."""
    return {name: (value, size) for name, value, size, _ in _entries(path)}


def undefined_symbols(path: Path | str) -> set[str]:
    """The names an object uses without defining them (section index SHN_UNDEF)."""
    return {name for name, _, _, shndx in _entries(path) if shndx == 0}


def _entries(path: Path | str) -> list[tuple[str, int, int, int]]:
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)
    ]
    out: list[tuple[str, int, int, int]] = []
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        str_off = strtab[4]
        off, size, entsize = sh[4], sh[5], sh[9]
        for pos in range(off, off + size, entsize):
            st_name, _info, _other, shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", data, pos
            )
            if not st_name:
                continue
            end = data.index(b"\0", str_off + st_name)
            out.append((data[str_off + st_name : end].decode(), st_value, st_size, shndx))
    return out
