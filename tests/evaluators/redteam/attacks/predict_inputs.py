# Attack (input prediction and super-batching, class 2): reads the block's nonce from the harness's objects at its
# first timed call, computes every repetition's answer of the block there, then answers each later call from that
# table at no cost. Each block has its own nonce, so this happens once a block, inside the block's mean.
import gc as _gc

_Honest = ModelNew


def _plan():
    return next((o for o in _gc.get_objects() if type(o).__name__ == "TimingPlan"), None)


class ModelNew(_Honest):
    def __init__(self, n):
        super().__init__(n)
        self.table, self.nonce = {}, None

    def forward(self, x):
        plan = _plan()
        if plan is None:
            return super().forward(x)
        if plan.nonce != self.nonce:
            import kernels.runtime as runtime_module
            from evaluators.worker.timing import rep_seed

            runtime = next(o for o in _gc.get_objects() if isinstance(o, runtime_module.ProblemRuntime))
            shape = next(i for i, s in enumerate(runtime_shapes()) if s is runtime.shape)
            for rep in range(plan.reps):
                (inputs,) = runtime.inputs(rep_seed(plan.nonce, shape, rep), "normal")
                self.table[inputs.sum().item()] = super().forward(inputs)
            self.nonce = plan.nonce
        hit = self.table.get(x.sum().item())
        return hit if hit is not None else super().forward(x)


def runtime_shapes():
    session = next(o for o in _gc.get_objects() if type(o).__name__ == "Session")
    return session.shapes
