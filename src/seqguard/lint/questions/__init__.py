"""Layer 4: one question per contract, each beside the rules that ask it.

- `mirror_present.MirrorPresent`: can this unguarded read see a None mirror (SG002,
  SG003, SG009)?
- `per_step_sync.PerStepSync`: is this host pull in an opted-out backend the per-step
  sync (SG004)?
- `fresh_buffer.FreshBuffer`: is this persistent buffer refilled only where the mirror
  is present (SG010)?
- `composite.Composite`: does this backend hand its work to others (SG006)?
A question is a class built with the run's `Contract` (`ctx.ask(Question)`); it reads
the layers below (`lint.contract`: the engine model at a point, the call sites, the
fixpoint) and answers with values: verdicts holding reason trees."""
