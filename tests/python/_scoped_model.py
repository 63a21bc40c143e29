"""The small model and eager op the fork and shared-team tests share: one
grouped_matmul (a one-group linear) in a scope, then square + add (a module,
not a conftest: import it as `_scoped_model`)."""

import torch

import superkernel  # noqa: F401  (registers torch.ops.superkernel)
from superkernel import scope

sk = torch.ops.superkernel


def weights(seed=7):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(16, 8, generator=g) - 0.5, torch.rand(8, generator=g)


def tokens(rows=12, seed=3):
    return torch.rand(rows, 16, generator=torch.Generator().manual_seed(seed)) - 0.5


def eager(x, w, b):
    (y,) = sk.grouped_matmul([x], [w], [b])
    return y


class Scoped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        w, b = weights()
        self.w = torch.nn.Parameter(w)
        self.register_buffer("b", b)

    def forward(self, x):
        with scope.super_kernel("s"):
            (y,) = sk.grouped_matmul([x], [self.w], [self.b])
            return torch.square(y) + y
