"""Converts an end-to-end checkpoint (make_model.py) to GGUF with llama.cpp's
own convert_hf_to_gguf.py, from the llama.cpp source that
build_llama_bench.sh unpacked:

    .venv/bin/python bench/e2e/to_gguf.py LLAMA_CPP_DIR CHECKPOINT OUT.gguf --outtype bf16|q8_0

The one change: the converter identifies a tokenizer's pre-tokenizer by the
hash of a test string's tokens, and make_model.py's placeholder tokenizer
is none it knows; the family's own pre-tokenizer name (qwen2 for Qwen3,
deepseek-llm for DeepSeek-V2) is given instead. Weights and every other
field are converted by llama.cpp's code unchanged.
"""

import json
import os
import sys

PRE = {"qwen3-30b-a3b": "qwen2", "deepseek-v2-lite": "deepseek-llm"}


def main():
    llama, checkpoint = sys.argv[1], sys.argv[2]
    sys.path[:0] = [llama, os.path.join(llama, "gguf-py")]
    with open(os.path.join(checkpoint, "superkernel_e2e.json")) as f:
        shape = json.load(f)["shape"]
    import conversion.base as base

    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: PRE[shape]
    import convert_hf_to_gguf

    sys.argv = ["convert_hf_to_gguf.py", checkpoint, "--outfile", sys.argv[3]] + sys.argv[4:]
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main()
