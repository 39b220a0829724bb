"""The header ``np.save`` writes for a C-ordered array, alone: the writers that must not hold a matrix whole (a
version's ``vectors.npy``, a view's matrix beside the embedding cache) write it, then the rows a block at a time,
and their files are ``np.save``'s bytes."""

from __future__ import annotations

import io

import numpy as np


def npy_header(shape: tuple[int, ...], dtype: np.dtype | type = np.float32) -> bytes:
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": tuple(shape)})
    return head.getvalue()
