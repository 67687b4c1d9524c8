"""Edits of an exported ONNX graph: the constants paddle2onnx writes but nothing reads dropped, the
parameters made initializers, the weight parts StaticBiLM splits folded into weights of their own,
the MatMuls found by kind, and a MatMul's input normalised per token. save_onnx (deploy) and
quantize_onnx (quantize) use them; each takes and changes an onnx ModelProto or GraphProto.
"""
import numpy as np


def drop_unused_constants(graph):
    """Remove the Constant nodes paddle2onnx writes but no node reads (onnxruntime warns about each
    one when it loads the model). A Loop body reads its enclosing graphs' values by name, so a
    constant is used if any node of its graph or of a graph nested in it names it.
    -> the names read in `graph` and its nested graphs."""
    import onnx
    used = {name for node in graph.node for name in node.input} | {value.name for value in graph.output}
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                used |= drop_unused_constants(sub)
    keep = [node for node in graph.node if node.op_type != 'Constant' or any(o in used for o in node.output)]
    del graph.node[:]
    graph.node.extend(keep)
    return used

def constants_to_initializers(graph):
    """Turn the graph's Constant nodes that hold a tensor (paddle2onnx writes every parameter as
    one) into initializers of the same name: quantize_dynamic quantizes a MatMul only when its
    weight is an initializer ("non constant B" otherwise), in the main graph and in the Loop
    bodies, which read the main graph's names. -> the number moved."""
    import onnx
    keep, moved = [], 0
    for node in graph.node:
        value = [a for a in node.attribute if a.name == 'value' and a.type == onnx.AttributeProto.TENSOR]
        if node.op_type == 'Constant' and value:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value[0].t)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
            moved += 1
        else:
            keep.append(node)
    del graph.node[:]
    graph.node.extend(keep)
    return moved


# Ops that only pick parts of a tensor: on weights they are folded into weights of their own.
_FOLDABLE = ('Split', 'Slice', 'Identity')


def fold_weight_parts(model):
    """Replace each Split / Slice / Identity of the main graph whose inputs are all initializers
    (StaticBiLM splits each LSTM's W into its input rows W_x and hidden rows W_h) by initializers
    holding its outputs, named after the weight (`lstm_layer_0.w_0.split1`: W's second part), and
    drop the initializers nothing reads any more: quantize_dynamic quantizes a MatMul only when
    its weight is an initializer, and gives each such matrix its own scale. Every graph (the Loop
    bodies read the main graph's names) is renamed. -> {new initializer name: source weight}."""
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator
    graph = model.graph
    opsets = {o.domain: o.version for o in model.opset_import}
    values = {t.name: t for t in graph.initializer}
    rename, origin, keep = {}, {}, []
    for node in graph.node:
        inputs = [name for name in node.input if name]
        if node.op_type not in _FOLDABLE or not inputs or not all(name in values for name in inputs):
            keep.append(node)
            continue
        source = rename.get(node.input[0], node.input[0])
        if node.op_type == 'Identity':
            rename[node.output[0]] = source
            continue
        outputs = ReferenceEvaluator(node, opsets=opsets).run(
            None, {name: numpy_helper.to_array(values[name]) for name in inputs})
        for k, (name, array) in enumerate(zip(node.output, outputs)):
            new = f'{source}.{node.op_type.lower()}{k}'
            values[name] = values[new] = numpy_helper.from_array(np.ascontiguousarray(array), new)
            rename[name], origin[new] = new, origin.get(source, source)
    del graph.node[:]
    graph.node.extend(keep)
    for g in nested_graphs(graph):
        for node in g.node:
            for k, name in enumerate(node.input):
                node.input[k] = rename.get(name, name)
        for value in g.output:
            value.name = rename.get(value.name, value.name)
    used = {name for g in nested_graphs(graph) for node in g.node for name in node.input}
    used |= {value.name for value in graph.output}
    kept = [t for t in graph.initializer if t.name in used] + [values[name] for name in origin if name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return {name: source for name, source in origin.items() if name in used}


# The kinds of MatMuls matmuls_of knows, in words (for the model's description).
MATMUL_KINDS = {'char_cnn': 'the char CNN', 'token': 'the token representation',
                'highway_projection': 'the highway and projection', 'lstm_input': "the LSTMs' input products",
                'recurrence': "the LSTMs' recurrent products"}


def matmuls_of(model, kinds):
    """Names of the MatMul nodes of the given kinds, any of: 'char_cnn' (the convolutions: their
    weights are char_encoder.conv_weights, which jit.save names char_encoder_*), 'token' (the token
    representation: char CNN, highway, projection), 'highway_projection' (the token representation
    but the char CNN), 'lstm_input' (each LSTM layer's input products x @ W_x for all steps, made
    before its Loop: weights lstm_layer_*, split by fold_weight_parts), 'recurrence' (inside the
    Loops: h @ W_h and the projection W_P). Every MatMul outside the Loops is of the first four."""
    main = [n for n in model.graph.node if n.op_type == 'MatMul']
    lstm = [n for n in main if any(name.startswith('lstm_layer') for name in n.input[1:])]
    cnn = [n for n in main if any(name.startswith('char_encoder') for name in n.input[1:])]
    kept = set(n.name for n in lstm) if 'lstm_input' in kinds else set()
    if 'token' in kinds:
        kept |= {n.name for n in main if n not in lstm}
    if 'highway_projection' in kinds:
        kept |= {n.name for n in main if n not in lstm and n not in cnn}
    if 'char_cnn' in kinds:
        kept |= {n.name for n in cnn}
    names = [n.name for n in main if n.name in kept]
    if 'recurrence' in kinds:
        names += [n.name for g in nested_graphs(model.graph) if g is not model.graph
                  for n in g.node if n.op_type == 'MatMul']
    return names


def normalize_per_token(model, names, rescale_in_loops=False):
    """Wrap each named MatMul of the main graph, y = x @ W, as y = ((x / r) @ W) * r with r each
    row's largest |value| (per token; a zero row stays zero): quantize_dynamic then quantizes
    x / r, whose rows all reach 1, with its one scale per call -- in effect one scale per token,
    which onnxruntime's DynamicQuantizeLinear cannot give (one scale per tensor, set by its
    largest value), while the product stays onnxruntime's fused DynamicQuantizeMatMul (float out;
    a MatMulInteger with per-row scales needs a Cast and a Mul over its whole output, which makes
    the int8 model slower).

    rescale_in_loops: where y is read only by Gathers of Loop bodies (the LSTM input products, one
    step's rows each), multiply back there, on the step's rows, instead of over the whole
    [time, batch, 4 * dim] product before the Loop (a memory-bound pass over the whole product).
    -> the number wrapped."""
    from onnx import helper, numpy_helper
    targets, out, wrapped = set(names), [], 0
    for node in model.graph.node:
        if node.op_type != 'MatMul' or node.name not in targets:
            out.append(node)
            continue
        p, x, y = f'{node.name}.per_token', node.input[0], node.output[0]
        model.graph.initializer.append(numpy_helper.from_array(np.array(1e-30, np.float32), f'{p}.tiny'))
        out += [helper.make_node('Abs', [x], [f'{p}.abs'], name=f'{p}.abs'),
                helper.make_node('ReduceMax', [f'{p}.abs'], [f'{p}.max'], name=f'{p}.max', axes=[-1], keepdims=1),
                helper.make_node('Max', [f'{p}.max', f'{p}.tiny'], [f'{p}.r'], name=f'{p}.r'),
                helper.make_node('Div', [x, f'{p}.r'], [f'{p}.x'], name=f'{p}.x')]
        node.input[0], node.output[0] = f'{p}.x', f'{p}.y'
        out.append(node)
        if not (rescale_in_loops and _rescale_in_loop_gathers(model.graph, y, f'{p}.y', f'{p}.r')):
            out.append(helper.make_node('Mul', [f'{p}.y', f'{p}.r'], [y], name=f'{p}.rescale'))
        wrapped += 1
    del model.graph.node[:]
    model.graph.node.extend(out)
    return wrapped


def _rescale_in_loop_gathers(graph, y, y_normalized, r):
    """If every reader of `y` is a Gather (axis 0) inside a Loop body, make each read y_normalized
    and r's same rows and multiply them there -> True; else change nothing -> False."""
    from onnx import helper
    readers = [(g, n) for g in nested_graphs(graph) for n in g.node if y in n.input]
    gathers = [(g, n) for g, n in readers if g is not graph and n.op_type == 'Gather' and n.input[0] == y
               and all(a.i == 0 for a in n.attribute if a.name == 'axis')]
    if not readers or len(gathers) != len(readers) or any(y == v.name for v in graph.output):
        return False
    for body, gather in gathers:
        nodes, k = list(body.node), list(body.node).index(gather)
        rows, scale, out = f'{gather.output[0]}.normalized', f'{gather.output[0]}.r', gather.output[0]
        gather.input[0], gather.output[0] = y_normalized, rows
        nodes[k + 1:k + 1] = [helper.make_node('Gather', [r, gather.input[1]], [scale], name=scale, axis=0),
                              helper.make_node('Mul', [rows, scale], [out], name=f'{out}.rescale')]
        del body.node[:]
        body.node.extend(nodes)
    return True


def nested_graphs(graph):
    """`graph` and every graph nested in its nodes (Loop bodies), outermost first."""
    import onnx
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                yield from nested_graphs(sub)
