"""Greedy generation with vLLM's offline LLM, for test_vllm_plugin.py and
bench/vllm/ (run in vLLM's environment, bench/vllm/make_venv.sh):

    python vllm_generate.py MODEL_DIR TOKENS [TENSOR_PARALLEL [ep]]

("ep": expert parallelism over the tensor-parallel ranks.)

Prints one line, "RESULT <json>": per prompt the generated ids, each
one's log-probability and its margin over the next most likely token. Whether superkernel runs vLLM's MoE experts is the
environment's SUPERKERNEL_VLLM (the plugin reads it in every process vLLM
starts)."""

import json
import sys

PROMPTS = ([1, 2, 3, 4, 5], [7, 100, 3, 9, 200, 11, 42], [5] * 19 + [8])


def main():
    from vllm import LLM, SamplingParams

    model, tokens = sys.argv[1], int(sys.argv[2])
    tp = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    ep = len(sys.argv) > 4 and sys.argv[4] == "ep"
    llm = LLM(model=model, skip_tokenizer_init=True, max_model_len=256, dtype="bfloat16", enforce_eager=True,
              tensor_parallel_size=tp, enable_expert_parallel=ep, seed=0)
    params = SamplingParams(max_tokens=tokens, temperature=0.0, detokenize=False, logprobs=2)
    out = llm.generate([{"prompt_token_ids": p} for p in PROMPTS], params)
    result = []
    for o in out:
        c = o.outputs[0]
        # margin: how far the chosen token's log-probability is ahead of the
        # best other one (a near tie, where another path may choose otherwise)
        result.append({"ids": list(c.token_ids), "logprobs": [lp[t].logprob for t, lp in zip(c.token_ids, c.logprobs)],
                       "margins": [lp[t].logprob - max((v.logprob for k, v in lp.items() if k != t), default=0.0)
                                   for t, lp in zip(c.token_ids, c.logprobs)]})
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":  # vLLM starts its engine with spawn: the guard is required
    main()
