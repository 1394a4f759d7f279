"""Regressions for what a new user hit (issue 11): each test is one rough edge, now smooth."""

import re

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.cli import main


def write_module(tmp_path, text, name="user_model.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_cli_grad_of_a_tensor_built_from_parameters_differentiates_them(tmp_path, capsys):
    path = write_module(tmp_path, (
        "import numpy as np, autograd_dag as ad\n"
        "def loss():\n"
        "    w = ad.Tensor(np.ones((3, 2)), requires_grad=True, name='w')\n"
        "    b = ad.Tensor(np.ones(2), requires_grad=True)\n"
        "    x = np.arange(12.0).reshape(4, 3) / 10\n"
        "    return (ad.tanh(x @ w) + b).sum()\n"))
    out = tmp_path / "g.dot"
    assert main(["render", f"{path}:loss", "--grad", "-o", str(out)]) == 0
    source = out.read_text()
    assert "df/dw" in source and "df/dparam1" in source and "gradient program" in source
    # The program drawn is the gradient with respect to w and b, and it is right.
    from autograd_dag.cli import _gradient_of, load_target
    gprog = _gradient_of(load_target(f"{path}:loss"), "loss")
    x = np.arange(12.0).reshape(4, 3) / 10
    dw, db = gprog(np.ones((3, 2)), np.ones(2))
    np.testing.assert_allclose(dw, x.T @ (1 - np.tanh(x @ np.ones((3, 2))) ** 2))
    np.testing.assert_allclose(db, [4.0, 4.0])



USER_CODE = (
    "import numpy as np, autograd_dag as ad\n"
    "def helper(x):\n"
    "    return x + undefined_name\n"
    "def broken():\n"
    "    return helper(ad.Tensor(np.ones(2), name='x'))\n"
    "def mismatched():\n"
    "    return ad.Tensor(np.ones(2)) + ad.Tensor(np.ones(3))\n"
    "def ok():\n"
    "    return ad.exp(ad.Tensor(np.ones(2), name='x')).sum()\n")


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("autograd-dag: error: ")
    return line


def test_cli_reports_the_users_exception_in_one_line_with_their_line(tmp_path, capsys):
    path = write_module(tmp_path, USER_CODE)
    assert main(["render", f"{path}:broken", "-o", str(tmp_path / "b.svg")]) == 2
    line = one_error_line(capsys)
    assert "NameError" in line and "undefined_name" in line and "(at user_model.py:3)" in line
    assert main(["render", f"{path}:mismatched", "-o", str(tmp_path / "m.svg")]) == 2
    line = one_error_line(capsys)
    assert "ShapeError" in line and "user_model.py:7" in line
    bad = write_module(tmp_path, "x = (\n", "bad_syntax.py")
    assert main(["render", f"{bad}:f"]) == 2
    assert "SyntaxError" in one_error_line(capsys)


def test_cli_unwritable_output_is_one_line_with_status_2(tmp_path, capsys):
    path = write_module(tmp_path, USER_CODE)
    (tmp_path / "a_file").write_text("")
    target = tmp_path / "a_file" / "out.svg"  # a folder that is a file: fails even for root
    assert main(["render", f"{path}:ok", "-o", str(target)]) == 2
    assert f"cannot write '{target}'" in one_error_line(capsys)


def test_cli_version_depth_and_format_hint(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"autograd-dag {ad.__version__}"
    path = write_module(tmp_path, USER_CODE)
    with pytest.raises(SystemExit) as exit_:
        main(["render", f"{path}:ok", "--depth", "-1"])
    assert exit_.value.code == 2 and "--depth" in capsys.readouterr().err
    assert main(["render", f"{path}:ok", "-o", str(tmp_path / "picture")]) == 2
    line = one_error_line(capsys)
    assert "--format" in line and "format=" not in line
    assert not (tmp_path / "picture").exists()
    assert main(["render", f"{path}:ok", "-o", str(tmp_path / "picture"), "--format", "dot"]) == 0
    assert (tmp_path / "picture").read_text().startswith("digraph")


def test_gallery_names_its_own_lines_and_regenerates_byte_identical(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "autograd-dag"  # the console script's shape
    script.write_text("import sys\nfrom autograd_dag.cli import main\nsys.exit(main())\n")
    root = __import__("os").path.dirname(__import__("os").path.dirname(ad.__file__))
    env = dict(__import__("os").environ, PYTHONPATH=root)
    runs = [[sys.executable, "-m", "autograd_dag.cli"], [sys.executable, str(script)]]
    outs = []
    for k, command in enumerate(runs):
        out = tmp_path / f"viz{k}"
        subprocess.run(command + ["gallery", "--out", str(out), "--only", "book", "circuit", "nn_mlp"],
                       check=True, env=env, cwd=tmp_path, capture_output=True)
        outs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outs[0] == outs[1]
    dot = outs[0]["book_dag.dot"].decode()
    assert "runpy" not in dot and "autograd-dag:" not in dot
    import inspect
    from autograd_dag import gallery
    line = next(i for i, text in enumerate(inspect.getsource(gallery).splitlines(), 1)
                if "a = x2 * exp(x1)" in text)
    assert f"exp(%0)  float64[]  gallery.py:{line}" in dot


def test_render_draws_a_hand_built_graph_in_both_views():
    g = ad.Graph.from_edges([("x1", "a"), ("x2", "a"), ("a", "b"), ("x1", "b"), ("b", "c"), ("a", "c")])
    dag = ad.render(g).source
    assert dag.count("->") == g.num_edges and "graph: 5 nodes, 6 edges" in dag
    assert "<B>a</B>" in dag and "float64" not in dag
    bip = ad.render(g, "bipartite").source
    b = ad.graph_algorithms.to_bipartite(g)
    arrows = [line for line in bip.splitlines() if "->" in line]
    assert len(arrows) == b.num_edges and "<B>f</B><SUB>b</SUB>" in bip
    ad.render(g, "bipartite").pipe("svg")  # Graphviz accepts it
    # Vertices naming primitives are drawn as those primitives.
    h = ad.Graph.from_edges([("x", "exp"), ("exp", ("multiply", 1)), ("x", ("multiply", 1))])
    source = ad.render(h, "bipartite", color_by="op").source
    assert "<B>multiply</B>>" in source and "<B>exp</B>>" in source
    # A graph given primitives and example inputs is a program to run and to draw.
    runnable = ad.Program.from_graph(h, {"exp": "exp", ("multiply", 1): "multiply"}, {"x": np.ones(2)})
    assert "multiply" in ad.render(runnable).source


def test_parameters_are_named_by_attribute_path_and_drawn_by_name():
    model = ad.nn.LeNet(rng=0)
    assert [p.name for p in model.parameters()] == [n for n, _ in model.named_parameters()]
    x = ad.Tensor(np.zeros((1, 1, 28, 28)), name="images")
    source = ad.render(model.logits(x) if hasattr(model, "logits") else model(x)).source
    assert "<B>conv1.weight</B>" in source and "<B>fc4.bias</B>" in source
    assert "<B>parameter</B>" not in source
    mlp = ad.nn.MLP([2, 3, 4], rng=0)
    assert mlp.layers[1].weight.name == "layers.1.weight"
    own = ad.nn.Parameter(np.ones(2), name="my_bias")

    class Custom(ad.nn.Module):
        def __init__(self):
            super().__init__()
            self.b = own
            self.inner = ad.nn.Linear(2, 2, rng=0)

        def forward(self, x):
            return self.inner(x) + self.b

    model = Custom()
    assert own.name == "my_bias" and model.inner.weight.name == "inner.weight"


def test_loading_a_text_file_says_it_is_not_an_npz_archive(tmp_path):
    import pickle
    text = tmp_path / "weights.npz"
    text.write_text("weight = [1, 2, 3]\n")
    model = ad.nn.Linear(2, 3, rng=0)
    with pytest.raises(ad.SerializationError) as info:
        model.load(text)
    assert "is not an .npz archive" in str(info.value) and "pickled" not in str(info.value)
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(ad.SerializationError, match="not an .npz archive"):
        model.load(tmp_path / "empty.npz")
    np.save(tmp_path / "one.npy", np.ones(3))
    with pytest.raises(ad.SerializationError, match="single array"):
        model.load(tmp_path / "one.npy")
    (tmp_path / "p.npz").write_bytes(pickle.dumps({"weight": 1}))
    with pytest.raises(ad.SerializationError, match="pickled data"):
        model.load(tmp_path / "p.npz")


def test_too_large_for_a_bitmap_is_refused_not_shrunk(tmp_path):
    chain = ad.Graph.from_edges([(i, i + 1) for i in range(600)])
    graph = ad.render(chain, max_nodes=None)  # every node: the default budget would make it fit
    with pytest.raises(ad.RenderError) as info:
        graph.render(str(tmp_path / "chain.png"))
    message = str(info.value)
    assert "too large for a PNG" in message and "SVG" in message and "depth=" in message
    assert not (tmp_path / "chain.png").exists()
    graph.render(str(tmp_path / "chain.svg"))  # vector formats have no limit


def test_graphviz_warnings_are_shown(recwarn):
    from autograd_dag.render.output import GraphvizWarning, layout
    with pytest.warns(GraphvizWarning, match="Graphviz"):
        layout('digraph { a [shape=no_such_shape]; a -> b }', "svg")


def test_automatic_collapse_is_said_in_the_title():
    from autograd_dag.gallery import mlp_program
    with pytest.warns(UserWarning, match="max_nodes=10"):
        source = ad.render(mlp_program(), max_nodes=10).source
    title = source.split("\n")[1]
    assert "collapsed automatically: " in title and "more than max_nodes=10" in title
    assert "collapsed automatically" not in ad.render(mlp_program()).source


def test_edges_into_non_commutative_operations_name_their_operand():
    prog = ad.trace(lambda x, y: ad.where(x > y, x - y, y / x) @ ad.exp(y), np.ones((2, 2)), 2 * np.ones((2, 2)))
    source = ad.render(prog, legend=False).source
    edges = {tuple(re.findall(r"n(\d+)", line)[:2]): re.search(r"label=<([^>]*)>", line)
             for line in source.splitlines() if "->" in line}
    labels = {k: (m.group(1) if m else None) for k, m in edges.items()}
    ops = {n.op: n.index for n in prog.nodes}
    sub, div, where, mm = ops["subtract"], ops["divide"], ops["where"], ops["matmul"]
    assert labels[("0", str(sub))] == "a" and labels[("1", str(sub))] == "b"   # x - y
    assert labels[("1", str(div))] == "a" and labels[("0", str(div))] == "b"   # y / x
    assert labels[(str(ops["greater"]), str(where))] == "cond"
    assert labels[(str(where), str(mm))] == "a" and labels[(str(ops["exp"]), str(mm))] == "b"
    assert "a / b" in source and "cond ? a : b" in source
    # Commutative operations keep unlabelled edges; shapes join the operand names.
    add = ad.trace(lambda x, y: x + y, 1.0, 2.0)
    assert "label=<" not in "".join(l for l in ad.render(add, legend=False).source.splitlines() if "->" in l)
    shaped = ad.render(prog, "bipartite", edge_labels="shape", legend=False).source
    assert "label=<a [2,2]>" in shaped


def test_legend_explains_the_highlighted_path():
    from autograd_dag.gallery import book_gradient
    g = book_gradient()
    source = ad.render(g, highlight=ad.highlight_path(g, "x1", g.outputs[0])).source
    assert f"every path from %0 x1 to %{g.outputs[0]} df/dx1" in source and "the rest dimmed" in source
    assert "highlighted" not in ad.render(g).source


def test_a_gradient_circuit_is_titled_as_the_gradient(tmp_path, capsys):
    c = ad.circuits.parse("(x + y) * (x + y) + 3*x", name="f")
    source = ad.render(ad.circuits.gradient_circuit(c)).source
    title = source.splitlines()[1]
    assert "gradient circuit" in title and "grad_f" in title
    assert "#f7cdd6" in source  # outputs drawn as gradients
    out = tmp_path / "g.dot"
    assert main(["circuit", "x*y + x", "--grad", "-o", str(out)]) == 0
    assert "gradient circuit" in out.read_text().splitlines()[1]


def test_every_docstring_names_what_exists():
    import pathlib
    package = pathlib.Path(ad.__file__).parent
    root = package.parent
    missing = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for name in sorted(set(re.findall(r"\bad\.([A-Za-z_][A-Za-z_0-9]*)", text))):
            if not hasattr(ad, name):
                missing.append(f"{path.relative_to(root)}: ad.{name}")
        for ref in sorted(set(re.findall(r"\btests/[A-Za-z_0-9]+\.py\b", text))):
            if not (root / ref).exists():
                missing.append(f"{path.relative_to(root)}: {ref}")
    assert missing == []


def test_the_package_ships_py_typed():
    import pathlib
    package = pathlib.Path(ad.__file__).parent
    assert (package / "py.typed").exists()
    pyproject = (package.parent / "pyproject.toml").read_text()
    assert 'autograd_dag = ["py.typed"]' in pyproject


def test_rendered_graph_render_passes_graphviz_keywords(tmp_path):
    import warnings
    graph = ad.render(ad.trace(ad.exp, np.ones(2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = graph.render(str(tmp_path / "picture"), format="svg", cleanup=True)
        assert written.endswith("picture.svg")
        assert "image/svg+xml" in graph._repr_mimebundle_()


def test_lenet_default_has_no_padding_like_the_book():
    net = ad.nn.LeNet(rng=0)
    assert net.conv1.padding == (0, 0) and net.conv2.padding == (0, 0)
    assert net(np.zeros((1, 1, 28, 28))).shape == (1, 10) and net.features == 256


def test_mse_loss_offers_the_books_mean_over_examples():
    F = ad.nn.functional
    prediction = ad.Tensor(np.array([[1.0, 3.0], [2.0, 0.0]]))
    target = np.zeros((2, 2))
    assert float(F.mse_loss(prediction, target).value) == pytest.approx((1 + 9 + 4) / 4)
    # §4.2: the squared norm per example, averaged over the examples.
    assert float(F.mse_loss(prediction, target, reduction="mean_over_examples").value) == pytest.approx(
        (10 + 4) / 2)
    assert float(F.mse_loss(prediction, target, reduction="sum").value) == pytest.approx(14.0)
    ad.check_grads(lambda p: F.mse_loss(p, target, reduction="mean_over_examples"), (prediction.value,))
    with pytest.raises(ad.AutogradDagError, match="mean_over_examples"):
        F.mse_loss(prediction, target, reduction="average")


def test_a_path_has_at_least_one_edge():
    g = ad.Graph.from_edges([("a", "b")])
    assert g.has_path("a", "b") and not g.has_path("a", "a") and not g.has_path("b", "b")


def test_parser_shares_repeated_subexpressions_and_the_table_shows_both_sizes(capsys):
    c = ad.circuits.parse("(x + y) * (x + y) + 3*x")
    assert (c.size, c.num_gates) == (8, 4)
    assert ad.circuits.parse("(x + y) * (y + x)").size == 4
    assert main(["circuit", "--families"]) == 0
    table = capsys.readouterr().out
    rows = [line.split() for line in table.splitlines() if line.startswith("(x + y)(x + y) + 3x")]
    assert [row[-4] for row in rows] == ["8", "10"]
    from autograd_dag.gallery import GALLERY, circuit_program
    entry = next(e for e in GALLERY if e.name == "circuit")
    assert "size 8" in entry.title and circuit_program().num_edges == 8


@pytest.mark.parametrize("convert", [float, int])
def test_float_or_int_of_a_tensor_with_many_elements_names_its_shape_and_line(convert):
    # float(t) raised numpy's bare TypeError "only 0-dimensional arrays can be converted
    # to Python scalars", naming neither the Tensor's shape nor the user's line.
    t = ad.Tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ad.AutogradDagError, match=r"\(2, 3\).*6 elements.*test_new_user.py:\d+"):
        convert(t)
    assert convert(ad.Tensor(np.array([[2.0]]))) == 2  # one element converts, as numpy's does


def test_cli_names_an_unsupported_output_suffix(tmp_path, capsys):
    # "-o out.bmp" said "give it a suffix (.svg, ...)": it has one, just not a supported one.
    path = write_module(tmp_path, "import autograd_dag as ad\ndef f():\n    return ad.exp(ad.Tensor(1.0))\n")
    assert main(["render", f"{path}:f", "-o", str(tmp_path / "out.bmp")]) == 2
    err = capsys.readouterr().err
    assert "unknown output format 'bmp'" in err and "give it a suffix" not in err


def test_assigning_into_a_tensor_names_the_users_line():
    # The refusal said what to do instead but not where: no shape, no source line.
    t = ad.Tensor(np.ones(3), requires_grad=True) * 2.0
    with pytest.raises(ad.AutogradDagError, match=r"t\[0\] = \.\.\. on a Tensor of shape \(3,\).*test_new_user.py:\d+"):
        t[0] = 5.0


def test_a_bool_tensor_squared_has_numpys_dtype():
    # numpy's ** squares by np.square, so bool ** 2 is int8; the Tensor's ** gave int64
    # (found by test_properties' Python-number test; main's power primitive now squares too).
    a = np.array([[True, False, True]])
    for got, want in [((ad.Tensor(a) ** 2), a ** 2), (ad.Tensor(a) ** 3, a ** 3),
                      (ad.Tensor(a.astype(np.int32)) ** 2, a.astype(np.int32) ** 2)]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.value, want)
