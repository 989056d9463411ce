"""Linear layers whose bf16 weights are packed once into oneDNN's blocked layout (inference only).

Why: ``F.linear`` on bf16 CPU tensors has oneDNN reorder the weight into its AMX/AVX512-BF16
layout on every call, which for a question's ~30 tokens costs more than the product itself;
packed once, each of an encoder's products runs in about half the time with identical outputs
(measurements: docs/decisions.md). The packed weight has no gradient.
"""

from __future__ import annotations

from functools import cache

import torch


@cache
def onednn_packs_weights() -> bool:
    """Whether torch has oneDNN's prepacked-weight linear (``torch.ops.mkldnn._linear_pointwise``)
    and this CPU runs it on bf16: packing a small weight is the check, since oneDNN refuses bf16
    packing on a CPU without AVX512-BW/VL/DQ or AVX-NE-CONVERT ("bf16 path needs the cpu
    support ..."), where the encoder then keeps plain bf16 linears."""
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        PackedLinear(torch.nn.Linear(4, 4).to(torch.bfloat16))
    except (AttributeError, RuntimeError):
        return False
    return True


class PackedLinear(torch.nn.Module):
    """An inference-only ``nn.Linear`` whose bf16 weight is held in oneDNN's blocked layout."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, None)
        self.bias = None if linear.bias is None else linear.bias.detach()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
        return out


def prepack_linears(model: torch.nn.Module) -> None:
    """Replace every bf16 ``nn.Linear`` of ``model`` (in place) by a :class:`PackedLinear`."""
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear) and child.weight.dtype == torch.bfloat16:
                setattr(module, name, PackedLinear(child))
