"""How Tile's calls meet torch.compile: the one way to define a PyTorch op,
the registry through which ops carry Python objects, and the named rules
for what a call may do while torch.compile traces it.

A call runs its eager body on real tensors. Traced (Dynamo compiling, or
fake or functional tensors), it goes through the custom op tile::<name>
instead: its body runs when the compiled graph does, its fake body gives
the results' shapes. Everything that differs between the two is decided
here, nowhere else (test_architecture checks that no other module asks
whether it is traced or defines an op).
"""

import torch

_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _traced(tensors):
    if torch.compiler.is_compiling():
        return True
    for t in tensors:
        if type(t) not in _PLAIN and (
                isinstance(t, torch._subclasses.FakeTensor) or
                torch._is_functional_tensor(t)):
            return True
    return False


def _tensors_of(args):
    """The tensors among a call's arguments, one level of lists included
    (a kernel's arguments, an MLP's weight gradients)."""
    for a in args:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, torch.Tensor))


# Every op defined here, by name (test_architecture: they are all of the
# tile:: namespace).
OPS = {}


class Op:
    """A Tile call that torch.compile sees as the op tile::<name>.

    op(*args) runs `eager(*args)` on real tensors; traced, the op on
    `pack(*args)` (default: the call's arguments, which must then be what a
    custom op takes: tensors, numbers, strings, dtypes, lists of them).
    op(*args, out={i: tensor}) asks for result i in that tensor: the eager
    body writes it there (out=... is passed on); traced, the op's result is
    copied there, which torch.compile records as a mutation of the graph's
    input and may fuse or elide (the op itself stays functional)."""

    def __init__(self, name, eager, fake, mutates, body, pack):
        self.name = name
        self._eager = eager
        self._pack = pack
        self._op = torch.library.custom_op(f"tile::{name}", body,
                                           mutates_args=mutates)
        self._op.register_fake(fake)

    def __call__(self, *args, out=None):
        if not _traced(_tensors_of(args)):
            if out is None:
                return self._eager(*args)
            return self._eager(*args, out=out)
        results = self._op(*(self._pack(*args) if self._pack else args))
        if out:
            assert isinstance(results, (list, tuple)), \
                f"tile::{self.name}: results asked for in place need a list"
            results = list(results)
            for index, given in out.items():
                results[index] = given.copy_(results[index].view(given.shape))
        return results


def define_op(name, eager, fake, *, mutates=(), body=None, pack=None):
    """The op tile::`name`: `eager` runs the call on real tensors; traced,
    the op runs `body` (default `eager`) on the packed arguments (`pack`,
    default none: the call's own) when the compiled graph runs, `fake` on
    fake ones. `body`'s annotations are the op's schema; `mutates` names
    the arguments it writes (the op declares them: torch.compile orders
    the graph around the writes)."""
    op = Op(name, eager, fake, mutates, body or eager, pack)
    OPS[name] = op
    return op


# -- the registry -------------------------------------------------------------
#
# A custom op takes no Python objects: a call that needs one (a Kernel, a
# chunked head's configuration) passes the str key it was registered
# under, and the op's body looks it up.

_REGISTRY = {}


# Called while torch.compile traces too (a chunked head's parts are made in
# the traced call): Dynamo runs it then, with constant arguments, and bakes
# the key into the graph as the constant it is.
@torch.compiler.assume_constant_result
def register(key, value):
    """`value` under `key` (a str, an op's argument); returns `key`. Called
    while torch.compile traces, `value` must be made of constants only
    (str, bool, dtypes, tuples of them: a chunked head's parts); eagerly,
    anything (a Kernel)."""
    _REGISTRY[key] = value
    return key


def registered(key):
    """What `key` was registered with."""
    try:
        return _REGISTRY[key]
    except KeyError:
        raise RuntimeError(
            f"tile: no op configuration {key!r} in this process: an op's "
            "key is registered when its call is made or traced here, so a "
            "graph compiled elsewhere (a saved or packaged artifact) cannot "
            "name it; compile it in this process") from None


# -- what a call may do while torch.compile traces it -----------------------

def writes_in_place(tensors):
    """Whether a call may write results over tensors it was given (an
    elementwise backward over its inputs, a gradient into the caller's
    buffer): not traced — a traced graph may not mutate what it did not
    create, so there the results are new tensors."""
    return not _traced(tensors)


def reads_values(tensors):
    """Whether a call may read `tensors`' values on the host: not traced
    (fake tensors have none) and not while a CUDA graph captures (the read
    would synchronize with the GPU)."""
    if _traced(tensors):
        return False
    return not any(t.is_cuda for t in tensors) or \
        not torch.cuda.is_current_stream_capturing()


def sizes_known(tensors):
    """Whether `tensors`' sizes are ints a Python loop may run over: not
    traced, where they may be symbolic (the graph must not depend on
    them)."""
    return not _traced(tensors)


def runs_each_call():
    """Whether the Python around an op runs at each call: not while
    torch.compile traces, where it runs once and the compiled graph
    replays only the tensor operations — a check or a state change made
    there is not repeated, so what such code needs must exist before."""
    return not torch.compiler.is_compiling()


def forward_sets_attributes(params):
    """Whether an attribute a step sets on `params` (the main_grad
    contract's mark) is set in its forward rather than its backward: where
    torch.compile traces, since the compiled forward replays the
    assignment while a traced backward runs ahead of time on stand-ins
    and could set nothing."""
    return _traced(params)
