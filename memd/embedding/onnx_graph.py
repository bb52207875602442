"""Keep the packaged MiniLM's word-embedding table int8 in memory: one rewrite of its ONNX graph.

The model stores every weight as int8 codes with a float32 scale per row (``Cast`` then ``Mul``
in the graph). onnxruntime folds those constants into float32 at load, which is right for the
layers' matrices (multiplied on every call) but costs 45 MiB for the word-embedding table, of
which a query reads a few dozen rows. :func:`gather_before_dequantize` moves the ``Gather`` in
front of the dequantization (``Gather`` the int8 rows and their scales, then ``Cast`` and
``Mul`` those rows only): the same float operations on the same numbers, so the vectors are
bit for bit the ones of the original graph, and the table stays int8 (11 MiB).

ONNX is a protocol buffer; the few fields this needs are read and written here directly (the
``onnx`` package is not a dependency). Fields this module does not touch are copied byte for
byte.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path

from memd.errors import StoreError

Buffer = bytes | memoryview

# protocol buffer field numbers (onnx.proto3)
MODEL_GRAPH = 7
GRAPH_NODE = 1
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP_TYPE = 1, 2, 3, 4
NODE_DOMAIN = 7
GRAPH_INITIALIZER = 5
TENSOR_NAME = 8
MODEL_OPSET = 8
OPSET_DOMAIN, OPSET_VERSION = 1, 2

WORD_TABLE = "inner.embeddings.word_embeddings.weight"
"""The table's float name in the packaged model; ``_q`` / ``_scale`` name its codes and scales."""


class GraphRewriteError(StoreError):
    """The model's graph is not the shape this rewrite expects (it is then loaded as it is)."""


def varint(buf: Buffer, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf):
            raise GraphRewriteError("truncated protocol buffer")
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def fields(buf: Buffer) -> Iterator[tuple[int, int, Buffer, Buffer]]:
    """(field number, wire type, payload, the field's raw bytes) of each field in ``buf``."""
    i = 0
    while i < len(buf):
        start = i
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, j = varint(buf, i)
            payload = buf[i:j]
        elif wire == 1:
            j = i + 8
            payload = buf[i:j]
        elif wire == 5:
            j = i + 4
            payload = buf[i:j]
        elif wire == 2:
            length, i = varint(buf, i)
            j = i + length
            payload = buf[i:j]
        else:
            raise GraphRewriteError(f"unsupported wire type {wire}")
        if j > len(buf):
            raise GraphRewriteError("truncated protocol buffer")
        i = j
        yield number, wire, payload, buf[start:j]


def bytes_field(number: int, payload: Buffer) -> bytes:
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def strings(node: Buffer, number: int) -> list[str]:
    return [bytes(p).decode() for n, w, p, _ in fields(node) if n == number and w == 2]


def node_with(template: Buffer, inputs: list[str], outputs: list[str], name: str) -> bytes:
    """``template`` (a NodeProto) with new inputs, outputs and name; its other fields kept."""
    out: list[Buffer] = [bytes_field(NODE_INPUT, s.encode()) for s in inputs]
    out += [bytes_field(NODE_OUTPUT, s.encode()) for s in outputs]
    out.append(bytes_field(NODE_NAME, name.encode()))
    for number, _, _, raw in fields(template):
        if number not in (NODE_INPUT, NODE_OUTPUT, NODE_NAME):
            out.append(raw)
    return b"".join(out)


def graph_of(model: Buffer) -> Buffer:
    """The GraphProto of ``model`` (a ModelProto)."""
    graph = None
    for number, wire, payload, _ in fields(model):
        if number == MODEL_GRAPH and wire == 2:
            graph = payload
    if graph is None:
        raise GraphRewriteError("no graph in the model")
    return graph


def with_graph(model: Buffer, graph: Buffer, opset: Buffer = b"") -> bytes:
    """``model`` with ``graph`` for its graph; ``opset`` (an OperatorSetIdProto): imported too,
    in place of any import of the same domain."""
    domain = strings(opset, OPSET_DOMAIN) if opset else []
    out: list[Buffer] = []
    for number, wire, payload, raw in fields(model):
        if number == MODEL_GRAPH and wire == 2:
            out.append(bytes_field(MODEL_GRAPH, graph))
        elif not (
            domain
            and number == MODEL_OPSET
            and wire == 2
            and strings(payload, OPSET_DOMAIN) == domain
        ):
            out.append(raw)
    if opset:
        out.append(bytes_field(MODEL_OPSET, opset))
    return b"".join(out)


def gather_before_dequantize(model: Buffer, table: str = WORD_TABLE) -> bytes:
    """The model with ``Gather(Mul(Cast(table_q), table_scale), ids)`` rewritten as
    ``Mul(Cast(Gather(table_q, ids)), Gather(table_scale, ids))``. Raises GraphRewriteError
    when the graph does not hold exactly that pattern (or already had it rewritten)."""
    model = memoryview(model)  # slices of it copy nothing
    nodes: list[tuple[int, Buffer]] = []  # (index among the graph's fields, NodeProto)
    parts: list[Buffer] = []
    for number, wire, payload, raw in fields(graph_of(model)):
        if number == GRAPH_NODE and wire == 2:
            nodes.append((len(parts), payload))
        parts.append(raw)

    def only(pred: str, op: str) -> tuple[int, Buffer]:
        found = [
            (at, node)
            for at, node in nodes
            if strings(node, NODE_OP_TYPE) == [op] and pred in strings(node, NODE_INPUT)
        ]
        if len(found) != 1:
            raise GraphRewriteError(f"expected one {op} reading {pred}, found {len(found)}")
        return found[0]

    cast_at, cast = only(f"{table}_q", "Cast")
    cast_out = strings(cast, NODE_OUTPUT)
    mul_at, mul = only(cast_out[0], "Mul")
    if strings(mul, NODE_INPUT) != [cast_out[0], f"{table}_scale"]:
        raise GraphRewriteError("the dequantizing Mul does not read the table's scales")
    if strings(mul, NODE_OUTPUT) != [table]:
        raise GraphRewriteError("the dequantizing Mul does not make the table")
    gather_at, gather = only(table, "Gather")
    inputs = strings(gather, NODE_INPUT)
    if (
        inputs[0] != table
        or len(inputs) != 2
        or any(table in strings(n, NODE_INPUT) for _, n in nodes if n is not gather)
    ):
        raise GraphRewriteError("the table is read by more than its Gather")
    ids, (result,) = inputs[1], strings(gather, NODE_OUTPUT)
    rows_q, rows_scale, rows_f = f"{table}_rows_q", f"{table}_rows_scale", f"{table}_rows_f"
    replacement = b"".join(
        bytes_field(GRAPH_NODE, node)
        for node in (
            node_with(gather, [f"{table}_q", ids], [rows_q], f"{table}_gather_q"),
            node_with(gather, [f"{table}_scale", ids], [rows_scale], f"{table}_gather_scale"),
            node_with(cast, [rows_q], [rows_f], f"{table}_rows_cast"),
            node_with(mul, [rows_f, rows_scale], [result], f"{table}_rows_mul"),
        )
    )
    parts[gather_at] = replacement
    parts[cast_at] = parts[mul_at] = b""
    return with_graph(model, b"".join(parts))


def holds(path: Path, marker: str) -> bool:
    """Whether the file at ``path`` contains ``marker`` (the name of a node a rewrite adds: how
    a rewritten file is told from the packaged one); False when missing or empty."""
    try:
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return view.find(marker.encode()) >= 0
    except (OSError, ValueError):  # missing, or empty (mmap refuses a file of 0 bytes)
        return False


def is_rewritten(path: Path, table: str = WORD_TABLE) -> bool:
    """True when ``path`` holds a graph :func:`gather_before_dequantize` wrote (by the name of
    the node it adds: a plain copy of the packaged model has none)."""
    return holds(path, f"{table}_gather_q")


QUANTIZED_SUFFIX = "_int8_matmul"
"""Ends the name of every node :func:`quantize_matmuls` writes (how a written file is known)."""


def simple_node(inputs: list[str], outputs: list[str], name: str, op: str, domain: str) -> bytes:
    out = [bytes_field(NODE_INPUT, s.encode()) for s in inputs]
    out += [bytes_field(NODE_OUTPUT, s.encode()) for s in outputs]
    out.append(bytes_field(NODE_NAME, name.encode()))
    out.append(bytes_field(NODE_OP_TYPE, op.encode()))
    out.append(bytes_field(NODE_DOMAIN, domain.encode()))
    return b"".join(out)


def quantize_matmuls(model: Buffer) -> bytes:
    """The model with every ``MatMul(x, Mul(Cast(w_q), w_scale))`` (an int8 weight with a float
    scale per output column, dequantized at load) rewritten as onnxruntime's
    ``DynamicQuantizeMatMul(x, w_q, w_scale)``: the activations are quantized to 8 bits on the
    fly and multiplied in integers (VNNI/AMX where the CPU has them), about twice as fast for a
    short prompt. The vectors are close to the float graph's, not equal (cosine ~0.99 to them):
    for queries only, never for what is stored. Raises GraphRewriteError when no such MatMul
    is found."""
    model = memoryview(model)
    parts: list[Buffer] = []
    nodes: list[tuple[int, Buffer]] = []
    initializers: set[str] = set()
    for number, wire, payload, raw in fields(graph_of(model)):
        if number == GRAPH_NODE and wire == 2:
            nodes.append((len(parts), payload))
        elif number == GRAPH_INITIALIZER and wire == 2:
            initializers.update(strings(payload, TENSOR_NAME))
        parts.append(raw)
    made: dict[str, tuple[int, str, list[str]]] = {}  # output -> (part index, op, inputs)
    readers: dict[str, int] = {}
    for at, node in nodes:
        ins = strings(node, NODE_INPUT)
        for name in ins:
            readers[name] = readers.get(name, 0) + 1
        op = "".join(strings(node, NODE_OP_TYPE))
        for produced in strings(node, NODE_OUTPUT):
            made[produced] = (at, op, ins)
    dropped: set[int] = set()
    replaced = 0
    for at, node in nodes:
        if strings(node, NODE_OP_TYPE) != ["MatMul"]:
            continue
        ins = strings(node, NODE_INPUT)
        mul = made.get(ins[1]) if len(ins) == 2 else None
        if mul is None or mul[1] != "Mul" or len(mul[2]) != 2 or mul[2][1] not in initializers:
            continue
        cast = made.get(mul[2][0])
        if cast is None or cast[1] != "Cast" or len(cast[2]) != 1 or cast[2][0] not in initializers:
            continue
        weight, scale = cast[2][0], mul[2][1]
        name = "".join(strings(node, NODE_NAME)) or f"matmul_{at}"
        new = simple_node(
            [ins[0], weight, scale],
            strings(node, NODE_OUTPUT),
            name + QUANTIZED_SUFFIX,
            "DynamicQuantizeMatMul",
            "com.microsoft",
        )
        parts[at] = bytes_field(GRAPH_NODE, new)
        replaced += 1
        readers[ins[1]] -= 1
        if readers[ins[1]] == 0:  # the dequantized weight is read by nothing else now
            dropped.add(mul[0])
            readers[mul[2][0]] -= 1
            if readers[mul[2][0]] == 0:
                dropped.add(cast[0])
    if not replaced:
        raise GraphRewriteError("no MatMul reads an int8 weight dequantized by Cast and Mul")
    for at in dropped:
        parts[at] = b""
    opset = (
        bytes_field(OPSET_DOMAIN, b"com.microsoft")
        + encode_varint(OPSET_VERSION << 3)
        + encode_varint(1)
    )
    return with_graph(model, b"".join(parts), opset)


def is_quantized(path: Path) -> bool:
    """True when ``path`` holds a graph :func:`quantize_matmuls` wrote."""
    return holds(path, QUANTIZED_SUFFIX)
