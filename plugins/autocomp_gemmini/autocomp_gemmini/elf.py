"""Read symbols from a 64-bit little-endian ELF file (a program or an object), and write the
initial value of a data symbol in a linked program."""

from __future__ import annotations

import struct
from pathlib import Path


def symbols(path: Path | str) -> dict[str, tuple[int, int]]:
    """name -> (address, size) for every named symbol in .symtab."""
    return {name: (value, size) for name, value, size, _ in _entries(path)}


def undefined_symbols(path: Path | str) -> set[str]:
    """The names an object uses without defining them (section index SHN_UNDEF)."""
    return {name for name, _, _, shndx in _entries(path) if shndx == 0}


def write_symbol(path: Path | str, name: str, expected: bytes, value: bytes) -> None:
    """Overwrite the initial value of the data symbol `name` in a linked program with `value`.
    ValueError unless the symbol has exactly that size, lies in the file's image and holds
    `expected` there (so the offset computed is the symbol's)."""
    path = Path(path)
    data = bytearray(path.read_bytes())
    sections = _sections(data, path)
    found = [(v, size, shndx) for n, v, size, shndx in _entries(path, data) if n == name]
    if len(found) != 1 or found[0][1] != len(value) or len(expected) != len(value):
        raise ValueError(f"{path}: no single {len(value)}-byte symbol {name!r}")
    address, size, shndx = found[0]
    sh = sections[shndx] if 0 < shndx < len(sections) else None
    if sh is None or sh[1] == 8 or not sh[3] <= address <= sh[3] + sh[5] - size:  # 8: SHT_NOBITS
        raise ValueError(f"{path}: {name!r} is not in the file's image")
    offset = sh[4] + address - sh[3]
    if data[offset : offset + size] != expected:
        raise ValueError(f"{path}: {name!r} does not hold its placeholder")
    data[offset : offset + size] = value
    path.write_bytes(data)


def _sections(data: bytes, path: Path | str) -> list[tuple]:
    """The section headers (sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, ...)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    return [
        struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)
    ]


def _entries(path: Path | str, data: bytes | None = None) -> list[tuple[str, int, int, int]]:
    if data is None:
        data = Path(path).read_bytes()
    sections = _sections(data, path)
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
