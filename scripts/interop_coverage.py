"""Write (or check) the README's interop coverage table: the primitives ad.jax.lower has a rule for,
and the jaxpr primitives and ATen operators ad.from_jax / ad.from_torch replay.

    python scripts/interop_coverage.py          # print the table
    python scripts/interop_coverage.py --write  # rewrite it in README.md between its markers

tests/test_readme.py fails when the README's table differs from the one this writes.
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import autograd_dag as ad  # noqa: E402

BEGIN, END = "<!-- interop coverage: begin -->", "<!-- interop coverage: end -->"


def table() -> str:
    # (Of the library's own primitives: tests/test_jax_lowering.py checks that RULES and UNSUPPORTED
    # cover the registry exactly; counting the registry here would count primitives a test defines.)
    lowered = sorted(ad.jax.RULES)
    refused = ", ".join(f"`{p}` ({r})" for p, r in sorted(ad.jax.UNSUPPORTED.items()))
    rows = [
        "| route | covered | names |",
        "|---|---|---|",
        f"| `ad.jax.lower`: library primitives with a rule | {len(lowered)} of {len(lowered) + len(ad.jax.UNSUPPORTED)} | "
        f"{', '.join(f'`{p}`' for p in lowered)}; without: {refused} |",
        f"| `ad.from_jax`: jaxpr primitives replayed | {len(ad.frontends.JAX_PRIMITIVES)} | "
        f"{', '.join(f'`{p}`' for p in sorted(ad.frontends.JAX_PRIMITIVES))} |",
        f"| `ad.from_torch`: ATen operators replayed | {len(ad.frontends.TORCH_OPERATORS)} | "
        f"{', '.join(f'`{p}`' for p in sorted(ad.frontends.TORCH_OPERATORS))} |",
    ]
    return "\n".join(rows)


def block() -> str:
    return f"{BEGIN}\n{table()}\n{END}"


def main(argv) -> int:
    if "--write" in argv:
        path = ROOT / "README.md"
        text = path.read_text()
        start, end = text.index(BEGIN), text.index(END) + len(END)
        path.write_text(text[:start] + block() + text[end:])
    else:
        print(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
