"""Runs the example engine's code paths; prints JSON. Usage: engine_scenario.py mirror|none

Executed against the original and the codemodded engine trees (on PYTHONPATH)."""

import json
import sys


from engine.layers.attention.draft_backend import DraftTritonBackend
from engine.managers.metrics import decode_total_seq_lens, log_decode_stats
from engine.managers.schedule_batch import Req, ScheduleBatch
from engine.model_executor.forward_batch import ForwardBatch, attention_plan
from engine.speculative.draft import draft_positions, draft_tree_mask_len


def main(mode: str) -> dict:
    with_mirror = mode == "mirror"
    a = ScheduleBatch.from_reqs([Req(0, 5), Req(1, 9), Req(2, 2), Req(3, 14)], with_mirror)
    b = ScheduleBatch.from_reqs([Req(4, 3), Req(5, 7)], with_mirror)
    a.prepare_for_decode()
    a.filter_batch([0, 1, 3])
    a.merge_batch(b)
    a.set_length(1, 30)
    fb = ForwardBatch.init_new(a)
    return {key: _value(compute) for key, compute in {
        "seq_lens": lambda: a.seq_lens.tolist(),
        "mirror": lambda: None if a.seq_lens_cpu is None else a.seq_lens_cpu.tolist(),
        "mirror_sum": lambda: a.seq_lens_sum,
        "max_len": lambda: a.max_len(),
        "plan": lambda: attention_plan(fb),
        "stats": lambda: log_decode_stats(a),
        "positions": lambda: draft_positions(a, 2).tolist(),
        "tree_mask_len": lambda: draft_tree_mask_len(a, 4),
        "draft_backend": lambda: list(DraftTritonBackend().init_forward_metadata(fb)),
        "describe": lambda: a.describe(),
        "total": lambda: decode_total_seq_lens(a),
    }.items()}


def _value(compute):
    """One value, or the error that computing it raised (each key on its own)."""
    try:
        return compute()
    except Exception as e:  # the original engine crashes without the mirror
        return {"error": f"{type(e).__name__}: {e}"}


if __name__ == "__main__":
    try:
        print(json.dumps({"ok": main(sys.argv[1])}))
    except Exception as e:  # the original engine crashes without the mirror
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
