"""SGLang's history as a team with a baseline would have seen it (issue 23): two real
defects, each found by reading the releases, show up as new in the release that
introduced them, and one is counted fixed when upstream fixed it."""


import pytest

from conftest import bench_module

pytestmark = pytest.mark.slow

MULTI_LAYER = "sglang/srt/speculative/multi_layer_eagle_worker_v2.py"
METRICS = "sglang/srt/managers/scheduler_components/metrics_reporter.py"


def test_the_two_defects_are_new_in_the_release_that_brought_them(sglang_release, tmp_path):
    bench = bench_module("bench_history")
    trees = {v: sglang_release(v) for v in ("0.5.12.post1", "0.5.13", "0.5.16")}
    bench.write_baseline(trees["0.5.12.post1"], tmp_path / "0.5.12.post1.json")
    on_13 = bench.compare(trees["0.5.13"], tmp_path / "0.5.12.post1.json")
    new = {(f["path"], f["line"], f["code"]) for f in on_13["new"]}
    # 0.5.13 copied the single-layer EAGLE call without its guard:
    # multi_layer_eagle_worker_v2.py:279 hands `batch.seq_lens_sum` to
    # build_tree_kernel_efficient in MultiLayerEagleDraftWorker.draft (line 240)
    assert (MULTI_LAYER, 279, "SG002") in new
    # the forward-pass-metrics loop `for sl in batch.seq_lens_cpu:` moved into
    # SchedulerMetricsReporter._build_scheduled_request_metrics (metrics_reporter.py:277)
    # the release that made the mirror optional: a decode batch can carry None there
    assert (METRICS, 277, "SG002") in new

    bench.write_baseline(trees["0.5.13"], tmp_path / "0.5.13.json")
    on_16 = bench.compare(trees["0.5.16"], tmp_path / "0.5.13.json")
    new_16 = {(f["path"], f["code"]) for f in on_16["new"]}
    # 0.5.16 fixed it upstream: draft() hands the batch to build_eagle_verify_input
    # (multi_layer_eagle_worker_v2.py:417) and the read is gone while draft remains
    assert not [f for f in on_16["new"] if f["path"] == MULTI_LAYER and f["line"] in range(402, 432)]
    assert on_16["fixed"] >= 1
    assert "MultiLayerEagleDraftWorker.draft" in bench.qualnames(trees["0.5.16"] / MULTI_LAYER)
    # the metrics loop is still there (metrics_reporter.py:283): baselined, so not new
    assert (METRICS, "SG002") not in new_16
