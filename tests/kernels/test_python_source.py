"""Every parse of ours goes through one lock: CPython 3.11's AST constructor is not safe in two threads at once."""

import ast
import time
from concurrent.futures import ThreadPoolExecutor

from kernels import python_source


def test_parses_from_many_threads_run_one_at_a_time(monkeypatch):
    inside, most = [0], [0]
    real = ast.parse

    def watched(source, *args, **kwargs):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.005)  # long enough for another thread to enter, were it let in
        inside[0] -= 1
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", watched)
    with ThreadPoolExecutor(8) as pool:
        trees = list(pool.map(lambda k: python_source.parse(f"x = {k}"), range(32)))
    assert most[0] == 1 and [tree.body[0].value.value for tree in trees] == list(range(32))


def test_a_syntax_error_is_raised_as_ast_raises_it_and_frees_the_lock():
    try:
        python_source.parse("def (", filename="broken.py")
    except SyntaxError as error:
        assert error.filename == "broken.py"
    else:
        raise AssertionError("no SyntaxError")
    assert python_source.parse("y = 1").body and not python_source._LOCK.locked()
