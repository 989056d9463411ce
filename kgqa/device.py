"""Chooses the torch device once, at the edge (config), so library code never hard-codes one."""

from __future__ import annotations

import torch
from torch import nn

from kgqa.errors import ConfigError


def resolve_device(name: str) -> torch.device:
    """``"auto"`` means CUDA when available, else CPU; anything else must be a valid, present device."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise ConfigError(f"invalid device '{name}'", hint="use 'auto', 'cpu' or 'cuda[:N]'") from exc
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device '{name}' requested but CUDA is not available", hint="use 'cpu' or 'auto'")
    return device


def model_device(model: nn.Module) -> torch.device:
    """The device ``model``'s parameters live on (the CPU for a model without any), which its
    inputs must be moved to."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))
