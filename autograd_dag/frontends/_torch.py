"""PyTorch -> Program: placeholder until the torch importer lands."""
TORCH_OPERATORS: list = []


def from_torch(*args, **kwargs):
    raise NotImplementedError
