"""Weight-space averaging of an adapted model with its base (WiSE-FT, Wortsman et al. 2022), for experiment E14
(docs/experiments.md): every floating-point weight becomes (1 - a) x base + a x adapted, computed in float64 and
stored in the adapted weights' dtype; the other files are the adapted folder's (its ragrig_adapt.json left out:
the result is not what adapt trained).

    python benchmarks/merge_weights.py BASE_FOLDER ADAPTED_FOLDER OUT_FOLDER [--alpha 0.5]

Then use it like any model: ``ragrig ingest --set embedding.model=OUT_FOLDER`` (a new model id: a new index).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


def merge(base: Path, adapted: Path, out: Path, alpha: float) -> int:
    from safetensors.torch import load_file, save_file

    b, a = load_file(base / "model.safetensors"), load_file(adapted / "model.safetensors")
    missing = sorted(set(a) - set(b))
    if missing:
        raise SystemExit(f"{base}: has no weight {missing[0]} of {adapted} (not its base?)")
    merged = {k: ((1 - alpha) * b[k].double() + alpha * v.double()).to(v.dtype).contiguous()
              if v.is_floating_point() else v for k, v in a.items()}
    if out.exists():
        raise SystemExit(f"{out}: exists; choose a new folder")
    shutil.copytree(adapted, out, ignore=shutil.ignore_patterns("ragrig_adapt.json", "model.safetensors"))
    save_file(merged, out / "model.safetensors", metadata={"format": "pt"})
    return sum(v.numel() for v in merged.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("adapted", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--alpha", type=float, default=0.5, help="the adapted model's share (default 0.5)")
    args = ap.parse_args(argv)
    if not 0.0 <= args.alpha <= 1.0:
        raise SystemExit(f"--alpha {args.alpha}: a share between 0 and 1")
    n = merge(args.base, args.adapted, args.out, args.alpha)
    print(f"{args.out}: {n:,} weights, alpha {args.alpha:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
