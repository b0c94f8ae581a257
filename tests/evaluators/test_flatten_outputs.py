"""What the harness takes as a call's outputs (worker/trials.flatten_outputs): plain tensors in exact containers."""

import pytest
import torch

from evaluators.worker.trials import flatten_outputs


def test_tensors_numbers_and_torchs_result_tuples_are_outputs():
    x = torch.arange(6.0).reshape(2, 3)
    assert [t.tolist() for t in flatten_outputs((x, [x][0], 2.0))] == [x.tolist(), x.tolist(), 2.0]
    values, indices = flatten_outputs(torch.max(x, dim=1))  # torch.return_types.max, a tuple subclass of torch's
    assert values.tolist() == [2.0, 5.0] and indices.tolist() == [2, 2]


class Listing(list):
    def __iter__(self):
        raise AssertionError("the harness ran the candidate's iterator")


class Number(float):
    def __float__(self):
        raise AssertionError("the harness ran the candidate's conversion")


@pytest.mark.parametrize(
    "output", [Listing([torch.ones(2)]), (Number(1.0),), torch.ones(2).as_subclass(type("T", (torch.Tensor,), {}))]
)
def test_subclasses_are_no_outputs_and_none_of_their_code_runs(output):
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        flatten_outputs(output)
