"""``embedding.device``: a torch device name, or ``auto`` (CUDA when torch sees a GPU, else the CPU)."""

from __future__ import annotations


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    try:
        import torch
    except ImportError:  # no torch: only the ONNX and endpoint backends run, on their own devices
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"
