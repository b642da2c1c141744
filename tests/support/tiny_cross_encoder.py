"""A tiny but real ONNX cross-encoder and WordPiece tokenizer, generated for tests (no downloads).

The graph is a hand-weighted "word overlap" scorer with the same inputs and output as a BERT
cross-encoder exported from sentence-transformers:

    inputs  input_ids, attention_mask, token_type_ids   int64 (batch, sequence)
    output  logits                                       float (batch, 1)

one_hot = Gather(identity, input_ids)                    # (b, s, V): an embedding lookup
query_bag = Min(ReduceSum(one_hot * query_mask, s), 1)  # which words the query has
text_bag  = Min(ReduceSum(one_hot * text_mask,  s), 1)  # which words the text has
logits    = MatMul(query_bag * text_bag, word_weights) + bias

so the logit is OVERLAP_WEIGHT * (number of distinct non-special words shared) + BIAS: a text
sharing no word with the query scores sigmoid(-2) ~ 0.12, one sharing two words sigmoid(2) ~ 0.88.
"""

from __future__ import annotations

from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
WORDS = (
    "the a is on of and to in what where who when how do does did my your "
    "cat kitten dog mat rug sofa sits sleeps likes "
    "tax filing deadline quarterly invoice "
    "coffee tea milk sugar morning drinks "
    "paris berlin lives city moved "
    "##s ##ing ##ed"
).split()
VOCAB = SPECIAL_TOKENS + WORDS
OVERLAP_WEIGHT = 2.0
BIAS = -2.0


def make_tiny_cross_encoder(folder: Path) -> Path:
    """Write model.onnx and tokenizer.json for the tiny cross-encoder into `folder`; return `folder`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _write_tokenizer(folder / "tokenizer.json")
    _write_model(folder / "model.onnx")
    return folder


def _write_tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {token: index for index, token in enumerate(VOCAB)}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # The pair template gives the text segment type id 1: the graph tells query from text by it.
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.save(str(path))


def _write_model(path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    size = len(VOCAB)
    word_weights = np.full((size, 1), OVERLAP_WEIGHT, dtype=np.float32)
    word_weights[: len(SPECIAL_TOKENS)] = 0.0  # [CLS]/[SEP] are in every pair: they must not count
    initializers = [
        numpy_helper.from_array(np.eye(size, dtype=np.float32), "identity"),
        numpy_helper.from_array(word_weights, "word_weights"),
        numpy_helper.from_array(np.array([BIAS], dtype=np.float32), "bias"),
        numpy_helper.from_array(np.array([1.0], dtype=np.float32), "one"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "sequence_axis"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis"),
    ]
    node = helper.make_node
    nodes = [
        node("Gather", ["identity", "input_ids"], ["one_hot"], axis=0),
        node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        node("Cast", ["token_type_ids"], ["segment"], to=TensorProto.FLOAT),
        node("Mul", ["mask", "segment"], ["text_mask"]),
        node("Sub", ["mask", "text_mask"], ["query_mask"]),
        node("Unsqueeze", ["query_mask", "last_axis"], ["query_mask_3d"]),
        node("Unsqueeze", ["text_mask", "last_axis"], ["text_mask_3d"]),
        node("Mul", ["one_hot", "query_mask_3d"], ["query_hot"]),
        node("Mul", ["one_hot", "text_mask_3d"], ["text_hot"]),
        node("ReduceSum", ["query_hot", "sequence_axis"], ["query_counts"], keepdims=0),
        node("ReduceSum", ["text_hot", "sequence_axis"], ["text_counts"], keepdims=0),
        node("Min", ["query_counts", "one"], ["query_bag"]),
        node("Min", ["text_counts", "one"], ["text_bag"]),
        node("Mul", ["query_bag", "text_bag"], ["shared"]),
        node("MatMul", ["shared", "word_weights"], ["weighted"]),
        node("Add", ["weighted", "bias"], ["logits"]),
    ]
    ids = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        inputs=[
            helper.make_tensor_value_info(name, TensorProto.INT64, ids)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        outputs=[helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=initializers,
    )
    # An IR version and opset every onnxruntime since 1.14 reads.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
