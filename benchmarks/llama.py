"""Shared by the Llama-layer benchmarks (e2e.py, fsdp.py): the layers'
model and the command line every such benchmark takes (their steps are
timed by timing.step_ms)."""

import argparse

import torch

HIDDEN, HEADS, KV_HEADS = 4096, 32, 8


def llama_layers(intermediate, layers, max_sequence, device="cuda"):
    """A bf16 stack of `layers` Hugging Face Llama decoder layers (hidden
    4096, 32 heads, 8 KV heads, SDPA attention), seeded, in training
    mode."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaModel
    config = LlamaConfig(
        hidden_size=HIDDEN, intermediate_size=intermediate,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
        num_hidden_layers=layers, vocab_size=256,
        max_position_embeddings=max_sequence, rope_theta=500000.0,
        rms_norm_eps=1e-5, attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaModel(config).to(torch.bfloat16)
    model.train()
    return model


def parse_options(columns, sequences, steps, default_columns=None):
    """(options, the columns asked for, the sequences) from the command
    line: --sequences, --columns (each one of `columns`; default
    `default_columns` or all), --layers, --steps, --json."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sequences", default=sequences)
    parser.add_argument("--columns",
                        default=",".join(default_columns or columns))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--json")
    options = parser.parse_args()
    asked = options.columns.split(",")
    for column in asked:
        if column not in columns:
            parser.error(f"unknown column {column}: {', '.join(columns)}")
    return options, asked, [int(s) for s in options.sequences.split(",")]

