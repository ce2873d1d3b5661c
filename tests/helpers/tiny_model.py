"""The smallest mmengine model a runner builds and loads a checkpoint into."""
import torch
from mmengine.model import BaseModel


class TinyModel(BaseModel):
    """One linear layer: enough for a runner to be built and a checkpoint loaded into it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        return self.linear(inputs)
