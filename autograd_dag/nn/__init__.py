"""The layer library: modules, activations, normalization, residual blocks, LeNet, recurrent
networks, decoding, attention, Transformers (BERT among them), word embeddings and losses.

Built only from public Tensor operations, so every model is a program: it
executes, differentiates (``loss.backward()``, ``ad.grad``) and renders with
one cluster per layer (each module call runs inside ``ad.name_scope``).
Every model returns logits from ``model(x)`` and probabilities from
``model.predict_proba(x)`` (see :class:`Classifier`), except the seeds'
Transformers (:class:`TransformerLM`, :class:`Transformer`), whose ``model(x)``
is the seeds' probabilities O: their losses take ``model.logits(...)``.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> from autograd_dag import nn
    >>> from autograd_dag.nn import functional as F
    >>> model = nn.MLP([2, 8, 3], rng=0)
    >>> loss = F.cross_entropy(model(np.ones((4, 2))), np.array([0, 1, 2, 0]))
    >>> loss.backward()
    >>> model.layers[0].weight.grad.shape
    (8, 2)
"""

from . import decoding, functional, init
from .checking import ModuleCheck, ParameterCheck, check_module
from .attention import MultiHeadAttention, attention, causal_mask, positional_encoding
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, ConvTranspose2d, Flatten, LeNet, MaxPool2d
from .embedding import Embedding, WordVectors
from .glove import Cooccurrence, GloVe, cooccurrence_counts, glove_loss, glove_weighting
from .layers import (MLP, Activation, Argmax, Classifier, Dropout, Identity, Linear, Logistic, LogisticRegression,
                     LogSumExp, Max,
                     ReLU, Sigmoid, Softargmax, Softmax, Softplus, Step, Tanh)
from .layers import (CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
                     Mish, ReLU6, SiLU, Softshrink, Softsign, Tanhshrink, MORE_ACTIVATIONS)
from .module import Module, ModuleList, Parameter, Sequential, functional_call
from .losses import BCEWithLogitsLoss, CrossEntropyLoss, NLLLoss
from .norm import BatchNorm, BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm2d, LayerNorm, group_norm
from .residual import Residual, ResidualBlock, ResidualBranch
from .word2vec import (CBOW, NegativeSampler, SkipGram, Word2Vec, cbow_hidden, cbow_log_likelihood, cbow_windows,
                       negative_sampling_loss, sgns_loss, skipgram_log_likelihood, skipgram_pairs, subsample)
from .transformer import (DecoderState, FeedForward, Transformer, TransformerBlock, TransformerDecoder,
                          TransformerDecoderBlock, TransformerEncoder, TransformerLM, Logits)
from .bert import BERT, BERTClassifier, BERTLoss, MLMHead, TransformerClassifier, insert_cls
from .rnn import (RNN, ElmanCell, EncoderDecoder, GRUCell, LSTMCell, MLPCell, RecurrentCell, SequenceToSequence,
                  SequenceToVector, VectorToSequence, make_cell, pool)

__all__ = [
    "functional", "init", "Module", "ModuleList", "Sequential", "Parameter", "functional_call",
    "Linear", "Dropout", "Classifier", "MLP", "LogisticRegression", "Activation", "Identity", "ReLU", "Softplus", "Step",
    "Logistic", "Sigmoid", "Tanh", "Softargmax", "Softmax", "Argmax", "Max", "LogSumExp", *MORE_ACTIVATIONS,
    "BatchNorm", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "InstanceNorm2d", "group_norm", "Residual", "ResidualBranch", "ResidualBlock",
    "Conv2d", "Conv1d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Flatten", "LeNet",
    "Embedding", "WordVectors", "Word2Vec", "SkipGram", "CBOW", "skipgram_log_likelihood", "cbow_log_likelihood",
    "cbow_hidden", "negative_sampling_loss", "sgns_loss", "skipgram_pairs", "cbow_windows", "subsample",
    "NegativeSampler", "GloVe", "Cooccurrence", "cooccurrence_counts", "glove_loss", "glove_weighting",
    "attention", "causal_mask", "positional_encoding", "MultiHeadAttention",
    "FeedForward", "TransformerBlock", "TransformerEncoder", "TransformerDecoderBlock", "TransformerDecoder",
    "TransformerLM", "Logits", "Transformer", "DecoderState",
    "insert_cls", "TransformerClassifier", "BERT", "BERTLoss", "MLMHead", "BERTClassifier",
    "decoding", "RecurrentCell", "MLPCell", "ElmanCell", "GRUCell", "LSTMCell", "make_cell", "RNN", "pool",
    "VectorToSequence", "SequenceToVector", "SequenceToSequence", "EncoderDecoder",
    "check_module", "ModuleCheck", "ParameterCheck", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss",
]
