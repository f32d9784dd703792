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
    return {
        "seq_lens": a.seq_lens.tolist(),
        "mirror": None if a.seq_lens_cpu is None else a.seq_lens_cpu.tolist(),
        "mirror_sum": a.seq_lens_sum,
        "max_len": a.max_len(),
        "plan": attention_plan(fb),
        "stats": log_decode_stats(a),
        "positions": draft_positions(a, 2).tolist(),
        "tree_mask_len": draft_tree_mask_len(a, 4),
        "draft_backend": list(DraftTritonBackend().init_forward_metadata(fb)),
        "describe": a.describe(),
        "total": decode_total_seq_lens(a),
    }


if __name__ == "__main__":
    try:
        print(json.dumps({"ok": main(sys.argv[1])}))
    except Exception as e:  # the original engine crashes without the mirror
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
