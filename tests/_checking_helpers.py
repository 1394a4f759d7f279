"""Scaffolding shared by the gradient-checking tests (one copy, not one per file)."""

import autograd_dag as ad


def scaling_primitive(name, scale, vjp_scale, jvp_scale):
    """x ↦ x·scale as a primitive whose VJP multiplies by ``vjp_scale`` and JVP by ``jvp_scale``.

    With both equal to ``scale`` its rules are right; a copy of ``scale`` with one entry
    changed makes a rule wrong in that entry alone (the tiny-entry tests).
    """
    return ad.primitive(name, lambda x: x * scale,
                        vjp=lambda ct, out, x: (ct * vjp_scale,), jvp=lambda t, out, x: t[0] * jvp_scale,
                        replace=True)
